#!/bin/sh
# gen_unicode_tables.sh OUT.c: regenerates src/tokenizer/unicode_tables.c, the Unicode
# differences between the libraries hymt links and the ones HF tokenizers was built with.
# A development tool (not run by the build): it needs perl (Unicode::UCD), cc with
# libonig-dev and libutf8proc-dev, node and npm (it installs the npm package "tokenizers",
# HF's Node binding, into a temporary folder).
#
# 1. Regex properties. HF's Oniguruma (the onig_sys crate's copy, 6.9.9+, Unicode 16.0)
#    knows letters, digits, marks, punctuation and symbols that Debian's libonig 6.9.8
#    (Unicode 14.0) does not. For \p{L} \p{N} \p{M} \p{P} \p{S} we ask both engines about
#    every code point and list what HF's matches in addition (nothing is matched by ours
#    only). regex.c adds these ranges to each such property in a pattern.
# 2. NFC. HF's NFC normalizer uses the crate unicode-normalization-alignments 0.1.12, whose
#    tables are Unicode 9.0.0: a character assigned later has, for it, combining class 0, no
#    decomposition and no composition. We list the characters not in Unicode 9.0 (perl's
#    In=9.0) that utf8proc treats otherwise; load_pipeline.c's NFC leaves them as they are
#    and normalizes the text between them (exact, by Unicode's normalization stability).
set -eu
out=${1:?usage: $0 OUT.c}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/onig_classes.c" <<'EOF'
/* one byte per code point: bit k set when this libonig matches \p{X_k} (X = L N M P S) */
#include <oniguruma.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
    const char *pats[5] = {"\\p{L}", "\\p{N}", "\\p{M}", "\\p{P}", "\\p{S}"};
    OnigRegex re[5];
    OnigErrorInfo ei;
    OnigEncoding enc = ONIG_ENCODING_UTF8;
    onig_initialize(&enc, 1);
    for (int k = 0; k < 5; k++)
        onig_new(&re[k], (const OnigUChar *)pats[k], (const OnigUChar *)pats[k] + strlen(pats[k]),
                 ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_DEFAULT, &ei);
    for (unsigned cp = 0; cp <= 0x10FFFF; cp++) {
        unsigned char u[4];
        int n, b = 0;
        if (cp >= 0xD800 && cp <= 0xDFFF) {
            putchar(0);
            continue;
        }
        if (cp < 0x80) {
            u[0] = cp, n = 1;
        } else if (cp < 0x800) {
            u[0] = 0xC0 | cp >> 6, u[1] = 0x80 | (cp & 63), n = 2;
        } else if (cp < 0x10000) {
            u[0] = 0xE0 | cp >> 12, u[1] = 0x80 | (cp >> 6 & 63), u[2] = 0x80 | (cp & 63), n = 3;
        } else {
            u[0] = 0xF0 | cp >> 18, u[1] = 0x80 | (cp >> 12 & 63);
            u[2] = 0x80 | (cp >> 6 & 63), u[3] = 0x80 | (cp & 63), n = 4;
        }
        for (int k = 0; k < 5; k++)
            if (onig_match(re[k], u, u + n, u, NULL, ONIG_OPTION_NONE) == n)
                b |= 1 << k;
        putchar(b);
    }
    return 0;
}
EOF

cat >"$tmp/hf_classes.js" <<'EOF'
// one byte per code point: bit k set when HF's Oniguruma matches \p{X_k} (X = L N M P S),
// seen through a Split(Removed) pre-tokenizer: a matched char leaves no ids
const { Tokenizer } = require('tokenizers');
const cats = ['L', 'N', 'M', 'P', 'S'];
const vocab = {};
for (let b = 0, n = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    vocab[String.fromCodePoint(printable ? b : 256 + n++)] = b;
}
const bl = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
const out = Buffer.alloc(0x110000);
(async () => {
    for (let k = 0; k < 5; k++) {
        const split = { type: 'Split', pattern: { Regex: `\\p{${cats[k]}}` }, behavior: 'Removed',
                        invert: false };
        const t = Tokenizer.fromString(JSON.stringify({
            version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null,
            pre_tokenizer: { type: 'Sequence', pretokenizers: [split, bl] }, post_processor: null,
            decoder: bl, model: { type: 'BPE', dropout: null, unk_token: null, vocab, merges: [] },
        }));
        for (let base = 0; base < 0x110000; base += 65536) {
            const texts = [], cps = [];
            for (let cp = base; cp < base + 65536; cp++)
                if (cp < 0xD800 || cp > 0xDFFF) texts.push(String.fromCodePoint(cp)), cps.push(cp);
            const encs = await t.encodeBatch(texts, { addSpecialTokens: false });
            encs.forEach((e, i) => { if (e.getIds().length === 0) out[cps[i]] |= 1 << k; });
        }
    }
    process.stdout.write(out);
})();
EOF

cat >"$tmp/nfc_mask.c" <<'EOF'
/* reads perl's In=9.0 inversion list; prints "FIRST LAST" ranges of code points not in
 * Unicode 9.0 that utf8proc gives a non-zero ccc, a canonical decomposition or a
 * composition */
#include <stdio.h>
#include <utf8proc.h>
int main(void)
{
    static unsigned char in9[0x110001];
    unsigned long a, b;
    while (scanf("%lu", &a) == 1) {
        if (scanf("%lu", &b) != 1)
            b = 0x110000;
        for (unsigned long c = a; c < b; c++)
            in9[c] = 1;
    }
    long start = -1;
    for (long cp = 0; cp <= 0x110000; cp++) {
        int rel = 0;
        if (cp < 0x110000 && !in9[cp]) {
            const utf8proc_property_t *p = utf8proc_get_property((utf8proc_int32_t)cp);
            rel = p->combining_class != 0 || p->comb_index != UINT16_MAX ||
                  (p->decomp_seqindex != UINT16_MAX && p->decomp_type == 0);
        }
        if (rel && start < 0)
            start = cp;
        if (!rel && start >= 0) {
            printf("%ld %ld\n", start, cp - 1);
            start = -1;
        }
    }
    return 0;
}
EOF

cc -O2 -o "$tmp/onig_classes" "$tmp/onig_classes.c" -lonig
cc -O2 -o "$tmp/nfc_mask" "$tmp/nfc_mask.c" -lutf8proc
(cd "$tmp" && npm install --silent tokenizers@0.23.2 >/dev/null)
"$tmp/onig_classes" >"$tmp/ours.bin"
NODE_PATH="$tmp/node_modules" node "$tmp/hf_classes.js" >"$tmp/hf.bin"
perl -MUnicode::UCD=prop_invlist -e 'print join(" ", prop_invlist("In=9.0")), "\n"' |
    "$tmp/nfc_mask" >"$tmp/nfc.txt"

python3 - "$tmp/ours.bin" "$tmp/hf.bin" "$tmp/nfc.txt" >"$out" <<'EOF'
import sys
ours, hf = open(sys.argv[1], 'rb').read(), open(sys.argv[2], 'rb').read()
def ranges(cps):
    r = []
    for cp in cps:
        if r and r[-1][1] == cp - 1:
            r[-1][1] = cp
        else:
            r.append([cp, cp])
    return r
def table(name, rs):
    print('const struct hy_tok_range %s[] = {' % name)
    line = '   '
    for a, b in rs:
        item = ' {0x%X, 0x%X},' % (a, b)
        if len(line) + len(item) > 96:
            print(line)
            line = '   '
        line += item
    print(line)
    print('};')
    print('const int %s_n = %d;\n' % (name, len(rs)))
print('/* unicode_tables.c: generated by src/tokenizer/gen_unicode_tables.sh; do not edit.')
print(' * hy_tok_prop_extra_X: code points that HF tokenizers\' Oniguruma (Unicode 16.0) matches')
print(' * with \\p{X} and this build\'s libonig (Unicode 14.0) does not.')
print(' * hy_tok_nfc_keep: code points HF\'s NFC (Unicode 9.0 tables) leaves alone that')
print(' * utf8proc would reorder, decompose or compose. */')
print('#include "tokenizer/tok_impl.h"\n')
for k, c in enumerate('LNMPS'):
    extra = [cp for cp in range(0x110000) if (hf[cp] >> k) & 1 and not (ours[cp] >> k) & 1]
    only = [cp for cp in range(0x110000) if (ours[cp] >> k) & 1 and not (hf[cp] >> k) & 1]
    if only:
        sys.exit('\\p{%s}: %d code points only ours matches; regex.c cannot remove them' % (c, len(only)))
    table('hy_tok_prop_extra_' + c, ranges(extra))
nfc = [tuple(int(x) for x in l.split()) for l in open(sys.argv[3])]
table('hy_tok_nfc_keep', [list(r) for r in nfc])
EOF
echo "wrote $out"
