#!/usr/bin/env python3
"""lang_profiles.py: builds src/translate/lang_profiles.bin, the character n-gram table that
src/translate/lang_detect.c scores text with (format: lang_ngram.h).

Corpus (public, from Debian packages; never the UDHR the detector is measured on):
  - the translations (msgstr) of every gettext catalog under LOCALE_DIR (default
    /usr/share/locale) for each language's locale folders; English from en_GB/en_AU/... plus
    the msgids, which are English in every catalog. Markup, format directives, URLs and
    accelerators are removed; a translation sharing most of its words with its msgid
    (left untranslated) is dropped; duplicates are dropped.
  - libexttextcat-data's fingerprints (top-400 n-grams by rank) for the Arabic-script
    languages, whose catalogs are small (Urdu has about 2 kB): rank r counts as
    FP_SCALE / (r + 10) occurrences.
Model: per language, code point n-grams of orders 1..3 (1..2 for Han) over lower-cased
words padded with a space, only words mostly in the language's script. A gram is stored
for a language when log P(gram | language, order) > FLOOR; its score is the quantized
log-probability above FLOOR (1/8 nat steps, 1..255); an unstored gram scores 0 for every
language, so a sum of scores is a naive-Bayes log-likelihood with FLOOR for unseen grams.

  - Debian's fortune cookies (fortunes-min, -ru, -es, -de, -it, -pl, -br, -cs): everyday
    language the catalogs lack, up to FORTUNE_CAP characters per language that has them.
Usage: scripts/lang_profiles.py [--locale DIR] [--textcat DIR] [--fortunes DIR] [-o FILE]
Without --textcat (--fortunes) the script fetches libexttextcat-data (the fortune
packages) with apt-get download into a temporary folder; --fortunes names their
usr/share/games/fortunes. It prints the corpus size per language."""
import argparse, collections, glob, math, os, random, re, struct, subprocess, sys
import tempfile, unicodedata

# Languages the table scores, by script group (the others are decided by script alone),
# with their gettext locale folders. The order is the table's language index.
LANGS = [
    ('latin', 'en', ['en_GB', 'en_AU', 'en_CA', 'en', 'en_US']),
    ('latin', 'fr', ['fr', 'fr_CA', 'fr_FR']),
    ('latin', 'pt', ['pt', 'pt_BR', 'pt_PT']),
    ('latin', 'es', ['es', 'es_ES', 'es_MX', 'es_AR', 'es_CO', 'es_CL']),
    ('latin', 'tr', ['tr']),
    ('latin', 'it', ['it']),
    ('latin', 'de', ['de', 'de_DE', 'de_CH', 'de_AT']),
    ('latin', 'vi', ['vi']),
    ('latin', 'ms', ['ms']),
    ('latin', 'id', ['id']),
    ('latin', 'tl', ['tl', 'fil']),
    ('latin', 'pl', ['pl']),
    ('latin', 'cs', ['cs']),
    ('latin', 'nl', ['nl']),
    ('cyrillic', 'ru', ['ru']),
    ('cyrillic', 'uk', ['uk']),
    ('cyrillic', 'kk', ['kk']),
    ('cyrillic', 'mn', ['mn']),
    ('arabic', 'ar', ['ar']),
    ('arabic', 'fa', ['fa']),
    ('arabic', 'ur', ['ur', 'ur_PK']),
    ('arabic', 'ug', ['ug']),
    ('devanagari', 'hi', ['hi']),
    ('devanagari', 'mr', ['mr']),
    ('han', 'zh', ['zh_CN', 'zh_SG']),
    ('han', 'zh-Hant', ['zh_TW', 'zh_HK']),
]
FINGERPRINTS = {'ar', 'fa', 'ur', 'ug'}
# Everyday language the catalogs lack (first person, food, weather): Debian's fortune
# cookies where a package has them, paths under usr/share/games/fortunes.
FORTUNE_PACKAGES = ['fortunes-min', 'fortunes-ru', 'fortunes-es', 'fortunes-de', 'fortunes-it',
                    'fortunes-pl', 'fortunes-br', 'fortunes-cs']
FORTUNES = {'en': ['fortunes', 'literature', 'riddles'], 'ru': ['ru'], 'es': ['es'],
            'de': ['de'], 'it': ['it'], 'pl': ['pl'], 'pt': ['brasil'], 'cs': ['cs']}
FORTUNE_CAP = 2_000_000  # characters per language
FP_SCALE = 3e6
FLOOR = -12.0          # log-probability of an unseen gram (nats)
STEP = 8               # quantization: 1/STEP nat
CORPUS_CAP = 4_000_000  # characters per language (shuffled, seeded)
MAGIC, VERSION = b'HYLP', 2
INDEX_BITS = 12        # the top bits of a gram's hash index where its entries start
WORD_MAX = 48          # code points of one word; a longer run is cut into words
# ISO 15924 names of the script groups, stored with each language
ISO15924 = {'latin': 'Latn', 'cyrillic': 'Cyrl', 'arabic': 'Arab', 'devanagari': 'Deva', 'han': 'Hani'}


def script_of(c):
    o = ord(c)
    if 0x3400 <= o <= 0x4DBF or 0x4E00 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF or o >= 0x20000:
        return 'han'
    if 0x400 <= o <= 0x52F:
        return 'cyrillic'
    if 0x600 <= o <= 0x6FF or 0x750 <= o <= 0x77F or 0xFB50 <= o <= 0xFDFF or 0xFE70 <= o <= 0xFEFF:
        return 'arabic'
    if 0x900 <= o <= 0x97F:
        return 'devanagari'
    if o < 0x250 or 0x1E00 <= o <= 0x1EFF:
        return 'latin'
    return None


def lower1(c):
    """Simple (one code point) lower case, as utf8proc_tolower."""
    lo = c.lower()
    return lo if len(lo) == 1 else c


def words(text, group):
    """The lower-cased words (runs of letters and marks) mostly in the group's script."""
    out, cur = [], []
    for c in text + ' ':
        if unicodedata.category(c)[0] in 'LM' and len(cur) < WORD_MAX:
            cur.append(lower1(c))
            continue
        if cur:
            letters = [x for x in cur if unicodedata.category(x)[0] == 'L']
            if letters and 2 * sum(script_of(x) == group for x in letters) >= len(letters):
                out.append(''.join(cur))
            cur = [lower1(c)] if unicodedata.category(c)[0] in 'LM' else []
    return out


def grams(text, group):
    top = 2 if group == 'han' else 3
    for w in words(text, group):
        p = ' ' + w + ' '
        for n in range(1, top + 1):
            for i in range(len(p) - n + 1):
                g = p[i:i + n]
                if g.strip():
                    yield g


def read_mo(path):
    b = open(path, 'rb').read()
    if len(b) < 20:
        return []
    for e in '<>':
        if struct.unpack(e + 'I', b[:4])[0] == 0x950412DE:
            break
    else:
        return []
    n, oo, ot = struct.unpack(e + '3I', b[8:20])
    res = []
    for i in range(n):
        l1, o1 = struct.unpack(e + '2I', b[oo + 8 * i:oo + 8 * i + 8])
        l2, o2 = struct.unpack(e + '2I', b[ot + 8 * i:ot + 8 * i + 8])
        try:
            mid, ms = b[o1:o1 + l1].decode(), b[o2:o2 + l2].decode()
        except UnicodeDecodeError:
            continue
        if mid:
            res.append((mid.split('\0')[0].split('\x04')[-1], ms.split('\0')))
    return res


CLEAN = [(re.compile(r'<[^>]*>'), ' '), (re.compile(r'https?://\S+|www\.\S+|\S+@\S+'), ' '),
         (re.compile(r'%(\([^)]*\))?[-+ #0-9.*$lhqLjzt]*[a-zA-Z%]'), ' '),
         (re.compile(r'\{[^}]*\}|\$\{[^}]*\}|\$\w+'), ' '), (re.compile(r'&\w+;'), ' '),
         (re.compile(r'[_&](?=\w)'), ''), (re.compile(r'\\[ntr]'), ' ')]


def clean(s):
    for r, t in CLEAN:
        s = r.sub(t, s)
    return s


def wordset(s):
    return set(w.lower() for w in re.findall(r'\w+', s))


def corpus(locale, code, folders):
    seen, out = set(), []
    files = [f for d in folders for f in sorted(glob.glob(f'{locale}/{d}/LC_MESSAGES/*.mo'))]
    for f in files:
        for mid, strs in read_mo(f):
            for s in strs:
                if not s or s == mid:
                    continue
                c = clean(s)
                w = wordset(c)
                if c in seen or (code != 'en' and w and len(w & wordset(mid)) > len(w) / 2):
                    continue
                seen.add(c)
                out.append(c)
    if code == 'en':  # every catalog's msgids are English: a seventh of the catalogs
        for f in sorted(glob.glob(f'{locale}/*/LC_MESSAGES/*.mo'))[::7]:
            for mid, _ in read_mo(f):
                c = clean(mid)
                if c not in seen:
                    seen.add(c)
                    out.append(c)
    random.Random(1).shuffle(out)
    res, total = [], 0
    for s in out:
        if total > CORPUS_CAP:
            break
        res.append(s)
        total += len(s)
    return res, len(files)


def fortunes(root, code):
    """The fortune cookies of code under root (one text each), shuffled and capped."""
    files = []
    for rel in FORTUNES.get(code, []):
        p = os.path.join(root, rel)
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p))
        else:
            files.append(p)
    out = []
    for f in files:
        if f.endswith('.dat') or os.path.islink(f) or not os.path.isfile(f):
            continue
        try:
            text = open(f, encoding='utf-8').read()
        except (UnicodeDecodeError, OSError):
            continue
        out += [t.strip() for t in re.split(r'\n%\n', text) if t.strip()]
    random.Random(2).shuffle(out)
    res, total = [], 0
    for t in out:
        if total > FORTUNE_CAP:
            break
        res.append(t)
        total += len(t)
    return res


def fortune_dir(arg):
    if arg:
        return arg
    tmp = tempfile.mkdtemp()
    subprocess.run(['apt-get', 'download'] + FORTUNE_PACKAGES, cwd=tmp, check=True)
    for deb in glob.glob(tmp + '/*.deb'):
        subprocess.run(['dpkg-deb', '-x', deb, tmp + '/x'], check=True)
    return tmp + '/x/usr/share/games/fortunes'


def fingerprint(path):
    c = collections.Counter()
    for r, line in enumerate(open(path, encoding='utf-8')):
        g = line.split('\t')[0].split(' ')[0].strip().replace('_', ' ')
        if 1 <= len(g) <= 3 and g.strip():
            c[g] += int(FP_SCALE / (r + 10))
    return c


def fnv1a(s):
    h = 0x811C9DC5
    for b in s.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def textcat_dir(arg):
    if arg:
        return arg
    if os.path.isdir('/usr/share/libexttextcat'):
        return '/usr/share/libexttextcat'
    tmp = tempfile.mkdtemp()
    subprocess.run(['apt-get', 'download', 'libexttextcat-data'], cwd=tmp, check=True)
    deb = glob.glob(tmp + '/*.deb')[0]
    subprocess.run(['dpkg-deb', '-x', deb, tmp + '/x'], check=True)
    return tmp + '/x/usr/share/libexttextcat'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--locale', default='/usr/share/locale')
    ap.add_argument('--textcat')
    ap.add_argument('--fortunes')
    ap.add_argument('-o', default=os.path.join(os.path.dirname(__file__), '..', 'src',
                                                'translate', 'lang_profiles.bin'))
    a = ap.parse_args()
    tc = textcat_dir(a.textcat)
    fd = fortune_dir(a.fortunes)
    entries = {}  # hash -> (gram, {lang index: q})
    for li, (group, code, folders) in enumerate(LANGS):
        texts, nfiles = corpus(a.locale, code, folders)
        texts += fortunes(fd, code)
        cnt = collections.Counter()
        for t in texts:
            cnt.update(grams(t, group))
        if code in FINGERPRINTS:
            cnt.update(fingerprint(f'{tc}/{code}.lm'))
        tot = collections.Counter()
        for g, v in cnt.items():
            tot[len(g)] += v
        kept = 0
        for g, v in cnt.items():
            lp = math.log(v / tot[len(g)])
            if lp <= FLOOR:
                continue
            q = min(255, max(1, round((lp - FLOOR) * STEP)))
            h = fnv1a(g)
            if h in entries and entries[h][0] != g:  # a collision: keep the first gram
                print(f'hash collision: {g!r} vs {entries[h][0]!r}', file=sys.stderr)
                continue
            entries.setdefault(h, (g, {}))[1][li] = q
            kept += 1
        print(f'{code:8} {nfiles:4} catalogs {sum(map(len, texts)):9} chars '
              f'{sum(cnt.values()):9} grams {kept:6} kept', file=sys.stderr)
    keys = sorted(entries)
    rows = [(h, li, q) for h in keys for li, q in sorted(entries[h][1].items())]
    out = bytearray(MAGIC)
    out += struct.pack('<6I', VERSION, len(LANGS), len(rows), STEP, int(-FLOOR * STEP),
                       INDEX_BITS)
    for group, code, _ in LANGS:
        out += code.encode().ljust(8, b'\0') + ISO15924[group].encode().ljust(8, b'\0')
    start, at = [], 0  # start[b]: the first entry whose hash's top bits are >= b
    for b in range((1 << INDEX_BITS) + 1):
        while at < len(rows) and rows[at][0] >> (32 - INDEX_BITS) < b:
            at += 1
        start.append(at)
    out += b''.join(struct.pack('<I', s) for s in start)
    out += b''.join(struct.pack('<I', h) for h, _, _ in rows)
    out += bytes(li for _, li, _ in rows)
    out += bytes(q for _, _, q in rows)
    with open(a.o, 'wb') as f:
        f.write(out)
    print(f'{a.o}: {len(out)} bytes, {len(keys)} grams, {len(rows)} entries', file=sys.stderr)


if __name__ == '__main__':
    main()
