#!/usr/bin/env python3
"""detect_test.py HYMT MODEL: POST /detect (LibreTranslate's shape) against `hymt serve` on
the tiny checkpoint with an API key: ranked candidates for a string and for an array, JSON
and form bodies, the key in the body or the Authorization header, LibreTranslate's errors
(400, 403, 405, 415), hostile input (invalid UTF-8, NULs, a long text, 129 texts), and
/api/translate reporting the detected source. Prints one line per check and
"N passed, N failed"; exit 1 on any failure."""
import json, os, re, subprocess, sys, tempfile, time, urllib.error, urllib.request

HYMT, MODEL = sys.argv[1], sys.argv[2]
KEY = 'sekret'
passed = failed = 0


def check(name, ok, detail=''):
    global passed, failed
    passed += bool(ok)
    failed += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + str(detail) if detail and not ok else ''}")


def post(base, body, ctype='application/json', key=KEY, method='POST'):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(base + '/detect', data=data if method == 'POST' else None,
                                 method=method)
    req.add_header('Content-Type', ctype)
    if key:
        req.add_header('Authorization', 'Bearer ' + key)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, raw


def ranked_ok(lst):
    """A LibreTranslate candidate list: languages, confidences 0-100 decreasing, <= 5."""
    if not isinstance(lst, list) or len(lst) > 5:
        return False
    conf = [c.get('confidence') for c in lst]
    return (all(isinstance(c, dict) and set(c) == {'language', 'confidence'} for c in lst) and
            all(isinstance(x, (int, float)) and 0 <= x <= 100 for x in conf) and
            conf == sorted(conf, reverse=True))


def main():
    log = tempfile.NamedTemporaryFile(prefix='hymt-detect-', suffix='.log', delete=False)
    p = subprocess.Popen([HYMT, 'serve', '-m', MODEL, '--port', '0', '--api-key', KEY],
                         stdout=log, stderr=log)
    try:
        port, t0 = None, time.time()
        while port is None and time.time() - t0 < 60 and p.poll() is None:
            m = re.search(r'serve: ready: .*:(\d+)/', open(log.name).read())
            port = m and m.group(1)
            time.sleep(0.05)
        if not port:
            print(open(log.name).read())
            check('server started', False)
            return
        run(f'http://127.0.0.1:{port}')
    finally:
        p.terminate()
        check('server exits 0 after SIGTERM', p.wait(timeout=30) == 0)
        os.unlink(log.name)


def run(base):
    st, j = post(base, {'q': 'Guten Morgen, wie geht es dir heute?'})
    check('string q: 200 and a ranked list', st == 200 and ranked_ok(j), j)
    check('German first, sure of it', st == 200 and j and j[0]['language'] == 'de' and
          j[0]['confidence'] > 50, j)
    check('only Latin-script candidates', st == 200 and all(c['language'] not in ('ru', 'zh', 'ar')
                                                            for c in j), j)
    st, j = post(base, {'q': ['Bonjour tout le monde, comment allez-vous ?',
                              '今天天气很好，我们去公园散步吧。', 'Привет, как у тебя сегодня дела?',
                              '12345 !!! ...']})
    check('array q: one list per text', st == 200 and isinstance(j, list) and len(j) == 4 and
          all(ranked_ok(x) for x in j), j)
    check('array q: fr, zh, ru, nothing', st == 200 and [x[0]['language'] if x else None for x in j]
          == ['fr', 'zh', 'ru', None], j)
    st, j = post(base, b'q=Dzie%C5%84+dobry%2C+jak+si%C4%99+dzisiaj+masz%3F&api_key=' + KEY.encode(),
                 'application/x-www-form-urlencoded', key=None)
    check('form body with api_key in it', st == 200 and j and j[0]['language'] == 'pl', (st, j))
    st, j = post(base, {'q': 'Hallo Welt', 'api_key': KEY}, key=None)
    check('JSON body with api_key in it', st == 200 and ranked_ok(j), (st, j))
    st, j = post(base, {'q': 'Hallo Welt'}, key=None)
    check('no key: 403 in LibreTranslate\'s shape', st == 403 and isinstance(j, dict) and
          isinstance(j.get('error'), str), (st, j))
    st, j = post(base, {'q': 'Hallo Welt'}, key='wrong')
    check('wrong key: 403', st == 403 and 'error' in j, (st, j))
    for body, name in [({}, 'no q'), ({'q': 5}, 'q a number'), ({'q': []}, 'q an empty array'),
                       ({'q': ['a', 7]}, 'q with a number'), ({'q': ['x'] * 129}, '129 texts')]:
        st, j = post(base, body)
        check(f'{name}: 400 {{"error"}}', st == 400 and isinstance(j, dict) and
              isinstance(j.get('error'), str), (st, j))
    st, j = post(base, b'{"q": "abc"', 'application/json')
    check('malformed JSON: 400', st == 400, (st, j))
    st, j = post(base, b'--x\r\n', 'multipart/form-data; boundary=x')
    check('multipart: 415', st == 415, (st, j))
    st, j = post(base, None, method='GET')
    check('GET: 405', st == 405, (st, j))
    st, j = post(base, b'q=%FF%FE%00abc', 'application/x-www-form-urlencoded')
    check('invalid UTF-8 / NUL in a form: an answer, no crash', st in (200, 400), (st, j))
    st, j = post(base, {'q': 'a\u0000b Guten Morgen'})
    check('NUL inside a JSON string: the body parser\'s 400', st == 400 and 'error' in j, (st, j))
    t = time.time()
    st, j = post(base, {'q': 'Das ist ein langer deutscher Text. ' * 6000})
    check('a 200 kB text: answered fast', st == 200 and j[0]['language'] == 'de' and
          time.time() - t < 5, (st, j[:1] if isinstance(j, list) else j, time.time() - t))
    # auto source on /api/translate reports the detected language
    req = urllib.request.Request(base + '/api/translate', data=json.dumps(
        {'text': 'Guten Morgen, wie geht es dir heute?', 'tgt': 'en', 'max_tokens': 4,
         'seed': 1}).encode(), method='POST')
    req.add_header('Authorization', 'Bearer ' + KEY)
    with urllib.request.urlopen(req, timeout=120) as r:
        j = json.loads(r.read())
    check('/api/translate auto: source_lang is the detected one', j.get('source_lang') == 'de', j)


if __name__ == '__main__':
    main()
    print(f'detect: {passed} passed, {failed} failed')
    sys.exit(1 if failed else 0)
