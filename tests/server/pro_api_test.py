"""pro_api_test.py HYMT DATA_DIR: glossaries, context, formats and the translation memory
through `hymt serve` (issue 18 items 2-5) on the tiny checkpoints.
- The prompts: /api/translate with two glossary terms (inline and stored), or a context,
  must build the HY-MT README's template byte for byte; so must LibreTranslate's /translate
  with glossary_id and POST /v1/documents with either glossary. The test writes each template out
  by hand and sends it as the one user message of /v1/chat/completions: the same prompt
  gives the same prompt-token count and, greedy, the same reply (the tiny model's output
  is noise, but equal noise proves equal ids); a variant without the terms must differ.
- /v1/glossaries: JSON, CSV, TSV and TBX (TBX-Basic and TBX 2019) entries, list, get,
  delete, the limits, persistence across a restart (--glossary-db), errors.
- format: SRT, WebVTT, Markdown and HTML through the API keep every markup line.
- --tm: the same document twice, the second time answered from the memory: 0 prompt and
  0 completion tokens, the hits on /metrics; "tm": false goes to the engine again.
- 7b-style model: glossary or context is a 400 unsupported_by_model."""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reliability"))
from http_util import Checks, Server, http  # noqa: E402

hymt, data = sys.argv[1], sys.argv[2]
os.environ["NO_PROXY"] = "*"
c = Checks("pro_api_test")
tmp = tempfile.mkdtemp(prefix="hymt-pro-")
GREEDY = {"temperature": 0, "repetition_penalty": 1.0}


def dechunk(b):
    out = b""
    while b:
        size, _, rest = b.partition(b"\r\n")
        n = int(size, 16)
        if n == 0:
            break
        out, b = out + rest[:n], rest[n + 2:]
    return out


def post(srv, path, body, method="POST"):
    st, hd, bd, _ = http(srv.port, method, path, body, timeout=60)
    if hd.get("transfer-encoding") == "chunked":
        bd = dechunk(bd)
    if hd.get("content-type", "").startswith("text/event-stream"):
        return st, bd
    try:
        return st, json.loads(bd) if bd else None
    except ValueError:
        return st, bd


def get(srv, path, method="GET"):
    return post(srv, path, None, method)


def translate(srv, greedy=True, **kw):
    body = {"target_lang": "de", "max_tokens": 6}
    body.update(GREEDY if greedy else {"temperature": 0})
    body.update(kw)
    return post(srv, "/api/translate", body)


def chat(srv, user, n=6):
    body = {"messages": [{"role": "user", "content": user}], "max_tokens": n}
    body.update(GREEDY)
    st, j = post(srv, "/v1/chat/completions", body)
    c.check(st == 200, "chat: %s %s" % (st, j))
    return j["usage"]["prompt_tokens"], j["choices"][0]["message"]["content"].strip()


def same_prompt(srv, what, tr, template):
    st, j = tr
    if not c.check(st == 200, "%s: %s %s" % (what, st, j)):
        return
    n, text = chat(srv, template)
    c.check(j["usage"]["prompt_tokens"] == n, "%s: %d prompt tokens, the template's %d"
            % (what, j["usage"]["prompt_tokens"], n))
    c.check(j["translation"].strip() == text, "%s: reply %r, the template's %r"
            % (what, j["translation"], text))


TERMS = "参考下面的翻译：\n%s\n将以下文本翻译为德语，注意只需要输出翻译后的结果，不要额外解释：\n%s"
CONTEXT = "%s\n参考上面的信息，把下面的文本翻译成德语，注意不需要翻译上文，也不要额外解释：\n%s"
FORMATTED = ("将以下<source></source>之间的文本翻译为德语，注意只需要输出翻译后的结果，不要额外解释，"
             "原文中的<sn></sn>标签表示标签内文本包含格式信息，需要在译文中相应的位置尽量保留该标签。"
             "输出格式为：<target>str</target>\n\n<source>%s</source>")
SEG = "My cat does machine learning."
TWO = "cat 翻译成 Katze\nmachine learning 翻译成 maschinelles Lernen\n"

TBX_BASIC = """<?xml version="1.0" encoding="UTF-8"?>
<martif type="TBX-Basic" xml:lang="en"><martifHeader><fileDesc><sourceDesc><p>x</p></sourceDesc></fileDesc></martifHeader>
<text><body>
<termEntry id="1"><langSet xml:lang="en-US"><tig><term>machine
  learning</term></tig></langSet><langSet xml:lang="de"><tig><term>maschinelles Lernen</term></tig><tig><term>ML</term></tig></langSet></termEntry>
<termEntry id="2"><langSet xml:lang="en"><tig><term>cat</term></tig></langSet><langSet xml:lang="de-DE"><tig><term>Katze</term></tig></langSet></termEntry>
<termEntry id="3"><langSet xml:lang="fr"><tig><term>chien</term></tig></langSet><langSet xml:lang="de"><tig><term>Hund</term></tig></langSet></termEntry>
</body></text></martif>"""
TBX_2019 = """<?xml version="1.0"?>
<tbx type="TBX-Basic" style="dca" xml:lang="en" xmlns="urn:iso:std:iso:30042:ed-2"><tbxHeader/><text><body>
<conceptEntry id="c1"><langSec xml:lang="en"><termSec><term>cat</term></termSec></langSec><langSec xml:lang="de"><termSec><term>Katze</term></termSec></langSec></conceptEntry>
</body></text></tbx>"""


def glossary_routes(srv):
    st, j = post(srv, "/v1/glossaries", {"name": "json", "source_lang": "en", "target_lang": "de",
                                         "entries": [{"source": "cat", "target": "Katze"},
                                                     {"source": "machine learning",
                                                      "target": "maschinelles Lernen"}]})
    c.check(st == 201 and j["entry_count"] == 2 and re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", j["glossary_id"]),
        "POST JSON: %s %s" % (st, j))
    gid = j["glossary_id"]
    st, j = post(srv, "/v1/glossaries", {"name": "tsv", "source_lang": "en", "target_lang": "de",
                                         "entries": "cat\tKatze\ndog\tHund\n",
                                         "entries_format": "tsv"})
    c.check(st == 201 and j["entry_count"] == 2, "POST TSV: %s %s" % (st, j))
    st, j = post(srv, "/v1/glossaries", {"name": "csv", "source_lang": "en", "target_lang": "de",
                                         "entries": '"machine learning",maschinelles Lernen\n'})
    c.check(st == 201 and j["entry_count"] == 1, "POST CSV: %s %s" % (st, j))
    st, j = post(srv, "/v1/glossaries", {"name": "tbx", "source_lang": "en", "target_lang": "de",
                                         "entries": TBX_BASIC})
    c.check(st == 201 and j["entry_count"] == 2 and j.get("entries_skipped") == 1,
            "POST TBX-Basic: %s %s" % (st, j))
    tbx_id = j.get("glossary_id")
    st, j = get(srv, "/v1/glossaries/%s" % tbx_id)
    c.check(st == 200 and j["entries"] == [{"source": "machine learning",
                                            "target": "maschinelles Lernen"},
                                           {"source": "cat", "target": "Katze"}],
            "GET TBX glossary: first term per language, whitespace folded: %s" % j)
    st, j = post(srv, "/v1/glossaries", {"name": "tbx19", "source_lang": "en",
                                         "target_lang": "de", "entries": TBX_2019,
                                         "entries_format": "tbx"})
    c.check(st == 201 and j["entry_count"] == 1, "POST TBX 2019: %s %s" % (st, j))
    st, j = get(srv, "/v1/glossaries")
    c.check(st == 200 and [g["name"] for g in j["glossaries"]] ==
            ["json", "tsv", "csv", "tbx", "tbx19"], "GET list: %s" % j)
    # errors: one clear 4xx each
    bad = [({"name": "x", "source_lang": "en", "target_lang": "xx", "entries": "a\tb"}, 400),
           ({"name": "x", "source_lang": "en", "target_lang": "de", "entries": "a\tb\nc"}, 400),
           ({"name": "x", "source_lang": "en", "target_lang": "de", "entries": "<tbx><body>"}, 400),
           ({"name": "x", "source_lang": "en", "target_lang": "de", "entries": "<root/>"}, 400),
           ({"name": "x", "source_lang": "en", "target_lang": "de", "entries": []}, 400),
           ({"name": "", "source_lang": "en", "target_lang": "de", "entries": "a\tb"}, 400),
           ({"name": "x", "source_lang": "en", "target_lang": "de", "entries": "a,b,fr,de"}, 400),
           ({"name": "x", "source_lang": "en", "target_lang": "de", "entries": "a\tb\nA\tc"}, 400),
           ({"name": "x", "source_lang": "en", "target_lang": "de", "entries": [{"source": 1}]},
            400),
           ({"source_lang": "en", "target_lang": "de", "entries": "a\tb"}, 400)]
    for body, want in bad:
        st, j = post(srv, "/v1/glossaries", body)
        c.check(st == want and "error" in j, "bad glossary %s: %s %s" % (body, st, j))
    # DeepL's /v2/translate takes a stored glossary_id and context too
    st, j = post(srv, "/v2/translate", {"text": [SEG], "target_lang": "DE", "glossary_id": gid})
    c.check(st == 200 and len(j.get("translations", [])) == 1 and
            j["translations"][0]["detected_source_language"] == "EN", "DeepL glossary_id: %s %s"
            % (st, j))
    st, j = post(srv, "/v2/translate", {"text": [SEG], "target_lang": "DE", "context": "Before."})
    c.check(st == 200, "DeepL context: %s %s" % (st, j))
    st, j = post(srv, "/v2/translate", {"text": [SEG], "target_lang": "DE", "glossary_id": "x"})
    c.check(st == 400 and j == {"message": "Value for 'glossary_id' not supported: no such "
                                           "glossary."}, "DeepL unknown glossary: %s %s" % (st, j))
    st, j = post(srv, "/v2/translate", {"text": [SEG], "target_lang": "FR", "glossary_id": gid})
    c.check(st == 400 and "glossary is for en -> de" in j.get("message", ""),
            "DeepL glossary for another pair: %s %s" % (st, j))
    st, j = get(srv, "/v1/glossaries/nope")
    c.check(st == 404 and j["error"]["code"] == "glossary_not_found", "GET unknown: %s" % j)
    st, j = post(srv, "/v1/glossaries/%s" % gid, {"x": 1}, "PUT")
    c.check(st == 405, "PUT: %s" % st)
    return gid, tbx_id


def prompts(srv, gid):
    tmpl = TERMS % (TWO, SEG)
    inline = [{"source": "machine learning", "target": "maschinelles Lernen"},
              {"source": "cat", "target": "Katze"}, {"source": "dog", "target": "Hund"}]
    same_prompt(srv, "inline glossary", translate(srv, text=SEG, source_lang="en",
                                                  glossary=inline), tmpl)
    same_prompt(srv, "glossary_id", translate(srv, text=SEG, glossary_id=gid), tmpl)
    # the terms matter: the plain prompt is shorter
    st, j = translate(srv, text=SEG, source_lang="en")
    n, _ = chat(srv, tmpl)
    c.check(st == 200 and j["usage"]["prompt_tokens"] < n, "plain prompt not shorter: %s" % j)
    st, j = translate(srv, text=SEG, source_lang="en", glossary=inline)
    c.check(j.get("segments_with_terms") == 1, "segments_with_terms: %s" % j)
    # HTML inline tags through the formatted-text prompt: the paragraph's segment is sent
    # with <sN> markers in the README's template; the tags come back (in place, or around
    # the run when the tiny model loses the markers: counted as moved)
    html = '<p>Hello <b>bold</b> and <a href="x.html">a link</a>.</p>'
    st, j = translate(srv, text=html, source_lang="en", format="html", tm=False)
    n, _ = chat(srv, FORMATTED % "Hello <s1>bold</s1> and <s2>a link</s2>.")
    c.check(st == 200 and j["usage"]["prompt_tokens"] == n and j.get("inline_tags", {}).get(
        "segments") == 1, "formatted-text prompt: %s, the template's %d tokens" % (j, n))
    out = j.get("translation", "")
    c.check(out.startswith("<p>") and out.endswith("</p>") and out.count("<b>") == 1 and
            out.count("</b>") == 1 and out.count('<a href="x.html">') == 1 and
            out.count("</a>") == 1, "tags kept: %r" % out)
    ctx = "The pilot sets the tone.\nIt matters."
    same_prompt(srv, "context", translate(srv, text="Dogs bark.", source_lang="en", context=ctx),
                CONTEXT % (ctx, "Dogs bark."))
    # refusals
    for body, code in [({"glossary_id": gid, "target_lang": "fr"}, "glossary_language_mismatch"),
                       ({"glossary_id": gid, "source_lang": "fr"}, "glossary_language_mismatch"),
                       ({"glossary_id": "0"}, "glossary_not_found"),
                       ({"glossary_id": gid, "glossary": inline}, "invalid_parameter"),
                       ({"glossary": [{"source": "a"}]}, "invalid_parameter"),
                       ({"glossary": [{"source": "a", "target": "b"}, {"source": "A",
                                                                       "target": "c"}]},
                        "invalid_glossary"),
                       ({"context": 5}, "invalid_parameter"),
                       ({"context_segments": 99}, "invalid_parameter"),
                       ({"format": "docz"}, "invalid_parameter"),
                       ({"tm": "yes"}, "invalid_parameter")]:
        kw = {"text": SEG}
        kw.update(body)
        st, j = translate(srv, **kw)
        c.check(st in (400, 404) and j["error"]["code"] == code,
                "refusal %s: %s %s" % (body, st, j))


def prompt_tokens(srv):
    _, _, m, _ = http(srv.port, "GET", "/metrics")
    return int(re.search(r"^hymt_prompt_tokens_total (\d+)$", m.decode(), re.M).group(1))


def document(srv, body):
    """POST /v1/documents, then GET until it is done: (POST status, last JSON)."""
    st, j = post(srv, "/v1/documents", body)
    if st != 202:
        return st, j
    for _ in range(300):
        st, g = get(srv, "/v1/documents/%s" % j["id"])
        if st != 200 or g.get("status") in ("done", "failed"):
            return 202, g
        time.sleep(0.05)
    return 202, g


def other_routes(srv, gid):
    """The glossary on LibreTranslate's /translate (glossary_id) and on /v1/documents
    (glossary or glossary_id): the same prompt as /api/translate's, so the same prompt
    tokens as the README's template (LibreTranslate answers no usage: the server's counter
    of prompt tokens moves by it)."""
    n, _ = chat(srv, TERMS % (TWO, SEG))
    before = prompt_tokens(srv)
    st, j = post(srv, "/translate", {"q": SEG, "target": "de", "glossary_id": gid})
    c.check(st == 200 and isinstance(j.get("translatedText"), str) and
            j.get("detectedLanguage", {}).get("language") == "en",
            "LibreTranslate glossary_id: %s %s" % (st, j))
    c.check(prompt_tokens(srv) - before == n, "LibreTranslate glossary_id: %d prompt tokens, "
            "the template's %d" % (prompt_tokens(srv) - before, n))
    before = prompt_tokens(srv)
    post(srv, "/translate", {"q": SEG, "source": "en", "target": "de"})
    c.check(prompt_tokens(srv) - before < n, "LibreTranslate without a glossary: not shorter")
    for body, want in [({"glossary_id": "x"}, "glossary_id"),
                       ({"glossary_id": gid, "target": "fr"}, "is for en -> de"),
                       ({"glossary_id": gid, "source": "fr"}, "is for en -> de"),
                       ({"glossary_id": 5}, "glossary_id: a string")]:
        kw = {"q": SEG, "target": "de"}
        kw.update(body)
        st, j = post(srv, "/translate", kw)
        c.check(st == 400 and want in j.get("error", ""), "LibreTranslate %s: %s %s"
                % (body, st, j))
    inline = [{"source": "machine learning", "target": "maschinelles Lernen"},
              {"source": "cat", "target": "Katze"}]
    for what, extra in [("glossary_id", {"glossary_id": gid}),
                        ("inline glossary", {"glossary": inline, "source_lang": "en"})]:
        body = {"text": SEG, "target_lang": "de", "max_tokens": 6}
        body.update(GREEDY)
        body.update(extra)
        st, j = document(srv, body)
        c.check(st == 202 and j.get("status") == "done" and j["usage"]["prompt_tokens"] == n
                and j.get("source_lang") == "en", "document with a %s: %s %s, the template's "
                "%d prompt tokens" % (what, st, j, n))
    for body, code in [({"glossary_id": gid, "target_lang": "fr"}, "glossary_language_mismatch"),
                       ({"glossary_id": "0"}, "glossary_not_found"),
                       ({"glossary_id": gid, "glossary": inline}, "invalid_parameter")]:
        kw = {"text": SEG, "target_lang": "de"}
        kw.update(body)
        st, j = post(srv, "/v1/documents", kw)
        c.check(st in (400, 404) and j["error"]["code"] == code, "document %s: %s %s"
                % (body, st, j))


SRT = "1\n00:00:01,000 --> 00:00:02,500\nHello there.\nSecond line.\n\n2\n00:00:03,000 --> 00:00:04,000\n<i>Bye.</i>\n"
VTT = "WEBVTT\n\nNOTE kept\n\nc1\n00:01.000 --> 00:02.000 align:start\nGood morning.\n"
MD = "# Title here\n\n- item one\n- item two\n\n```\ncode stays\n```\n\nSee [the docs](http://x.y/z).\n"
HTML = "<html><body><p title=\"Tip text\">Hello <b>world</b>.</p><script>var a = 1;</script></body></html>"


def formats(srv):
    for fmt, doc, kept in [("srt", SRT, ["1", "00:00:01,000 --> 00:00:02,500", "", "2"]),
                           ("vtt", VTT, ["WEBVTT", "", "NOTE kept", "", "c1",
                                         "00:01.000 --> 00:02.000 align:start"]),
                           ("markdown", MD, ["```", "code stays", "```"])]:
        for stream in (False, True):
            st, j = translate(srv, text=doc, format=fmt, tm=False, stream=stream)
            if stream:
                events = [json.loads(x[6:]) for x in j.decode().split("\n\n")
                          if x.startswith("data: {")] if isinstance(j, bytes) else []
                out = "".join(e.get("delta", "") for e in events)
                c.check(events and events[-1].get("type") == "done", "%s stream: %s" % (fmt, j))
            else:
                c.check(st == 200 and j.get("format") == fmt, "%s: %s %s" % (fmt, st, j))
                out = j.get("translation", "")
            lines = out.split("\n")
            c.check(len(lines) == len(doc.split("\n")), "%s%s: %d lines, %d in: %r" % (
                fmt, " stream" if stream else "", len(lines), len(doc.split("\n")), out))
            c.check(all(k in lines for k in kept), "%s: markup lost: %r" % (fmt, out))
            c.check(out != doc, "%s: nothing translated" % fmt)
    st, j = translate(srv, text=MD, format="markdown", tm=False)
    c.check("](http://x.y/z)" in j["translation"] and j["translation"].startswith("# "),
            "markdown link target and heading marker: %r" % j["translation"])
    st, j = translate(srv, text=HTML, format="html", tm=False)
    out = j["translation"]
    c.check(st == 200 and out.startswith("<html><body><p title=\"") and
            "<script>var a = 1;</script></body></html>" in out and "<b>" in out and
            "Tip text" not in out, "html: %r" % out)
    st, j = translate(srv, texts=[SRT, SRT], format="srt", tm=False)
    c.check(st == 200 and len(j["translations"]) == 2 and j["translations"][0] ==
            j["translations"][1], "srt batch: %s" % j)


def memory(data):
    """tiny-mqa stops by itself on these two segments (temperature 0 with the default
    repetition penalty, as `hymt translate --greedy`), so both are stored."""
    db = os.path.join(tmp, "tm.db")
    srv = Server(hymt, os.path.join(data, "tiny-mqa"), "--tm", db)
    try:
        doc = "Second one, longer.\n\nNo.\n"
        st, a = translate(srv, greedy=False, text=doc, max_tokens=300)
        c.check(st == 200 and a["tm"] == {"hits": 0, "stored": 2} and
                a["usage"]["completion_tokens"] > 0, "first run stores both: %s" % a)
        st, b = translate(srv, greedy=False, text=doc, max_tokens=300)
        c.check(st == 200 and b["tm"] == {"hits": 2, "stored": 0} and
                b["usage"] == {"prompt_tokens": 0, "completion_tokens": 0} and
                b["translation"] == a["translation"], "second run from the memory: %s" % b)
        _, _, m, _ = http(srv.port, "GET", "/metrics")
        m = m.decode()
        c.check(re.search(r"^hymt_tm_hits_total 2$", m, re.M) is not None and
                re.search(r"^hymt_tm_stored_total 2$", m, re.M) is not None,
                "metrics: %s" % re.findall(r"^hymt_tm.*$", m, re.M))
        # a second server on the same file (WAL): it finds what the first one stored, while
        # the first one keeps running and reading
        other = Server(hymt, os.path.join(data, "tiny-mqa"), "--tm", db)
        try:
            st, e = translate(other, greedy=False, text=doc, max_tokens=300)
            st2, f = translate(srv, greedy=False, text=doc, max_tokens=300)
            c.check(st == 200 and e["tm"] == {"hits": 2, "stored": 0} and
                    e["usage"]["completion_tokens"] == 0 and e["translation"] == a["translation"]
                    and st2 == 200 and f["tm"]["hits"] == 2,
                    "a second server sharing the memory: %s / %s" % (e, f))
        finally:
            c.check(other.stop() == 0, "second server exit")
        st, d = translate(srv, greedy=False, text=doc, max_tokens=300, tm=False)
        c.check(st == 200 and "tm" not in d and d["usage"]["completion_tokens"] > 0,
                "tm false: %s" % d)
        st, j = post(srv, "/v2/translate", {"text": ["x"], "target_lang": "DE", "context": "y"})
        c.check(st == 400 and "HY-MT1.5" in j.get("message", ""), "7b DeepL context: %s %s"
                % (st, j))
        # 7b style: glossary and context are refused before anything runs
        for kw in ({"glossary": [{"source": "a", "target": "b"}]}, {"context": "x"}):
            st, j = translate(srv, text=doc, **kw)
            c.check(st == 400 and j["error"]["code"] == "unsupported_by_model",
                    "7b %s: %s %s" % (kw, st, j))
        st, j = post(srv, "/v1/documents", {"text": doc, "target_lang": "de",
                                            "glossary": [{"source": "a", "target": "b"}]})
        c.check(st == 400 and j["error"]["code"] == "unsupported_by_model",
                "7b document with a glossary: %s %s" % (st, j))
    finally:
        c.check(srv.stop() == 0, "server exit (a sanitizer report fails it)")


def keep_lines(srv):
    """keep_lines: one output line per input line, the blank ones where they were; a bad
    value is a 400."""
    doc = "Hello there, my friend.\nThe second line.\n\nAfter a blank line.\nLast one."
    for stream in (False, True):
        st, j = translate(srv, text=doc, keep_lines=True, tm=False, stream=stream)
        if stream:
            events = [json.loads(x[6:]) for x in j.decode().split("\n\n")
                      if x.startswith("data: {")] if isinstance(j, bytes) else []
            out = "".join(e.get("delta", "") for e in events)
        else:
            out = j.get("translation", "") if st == 200 else ""
        lines = out.rstrip("\n").split("\n")
        c.check(st == 200 and len(lines) == 5 and lines[2] == "" and all(
            lines[k].strip() for k in (0, 1, 3, 4)),
            "keep_lines (stream %s): %s %r" % (stream, st, out))
    st, j = translate(srv, text=doc, keep_lines="yes")
    c.check(st == 400 and "keep_lines" in j["error"]["message"], "keep_lines \"yes\": %s %s"
            % (st, j))


def main():
    probe = subprocess.run([hymt, "tm", "count", "--tm", os.path.join(tmp, "probe.db")],
                           capture_output=True, text=True)
    if probe.returncode and "without SQLite" in probe.stderr:
        print("built without SQLite and expat: skipped")
        sys.exit(77)
    gdb = os.path.join(tmp, "gl.db")
    dense = os.path.join(data, "tiny-dense18")
    srv = Server(hymt, dense, "--glossary-db", gdb, "--max-glossaries", "6")
    try:
        gid, tbx_id = glossary_routes(srv)
        prompts(srv, gid)
        other_routes(srv, gid)
        formats(srv)
        keep_lines(srv)
        st, j = post(srv, "/v1/glossaries", {"name": "6th", "source_lang": "en",
                                             "target_lang": "de", "entries": "a\tb"})
        c.check(st == 201, "6th glossary: %s %s" % (st, j))
        st, j = post(srv, "/v1/glossaries", {"name": "7th", "source_lang": "en",
                                             "target_lang": "de", "entries": "a\tb"})
        c.check(st == 413 and j["error"]["code"] == "glossary_limit", "7th: %s %s" % (st, j))
        st, _, _, _ = http(srv.port, "DELETE", "/v1/glossaries/%s" % tbx_id)
        c.check(st == 204, "DELETE: %s" % st)
        st, j = get(srv, "/v1/glossaries/%s" % tbx_id)
        c.check(st == 404, "GET after DELETE: %s" % st)
    finally:
        c.check(srv.stop() == 0, "server exit")
    srv = Server(hymt, dense, "--glossary-db", gdb)  # the same file: the glossaries are back
    try:
        st, j = get(srv, "/v1/glossaries")
        c.check(st == 200 and [g["name"] for g in j["glossaries"]] ==
                ["json", "tsv", "csv", "tbx19", "6th"], "after a restart: %s" % j)
        same_prompt(srv, "glossary_id after a restart", translate(srv, text=SEG, glossary_id=gid),
                    TERMS % (TWO, SEG))
    finally:
        c.check(srv.stop() == 0, "server exit")
    memory(data)
    c.done()


main()
