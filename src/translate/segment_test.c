/* segment_test.c: sentence and paragraph boundaries for every script, merging, cutting
 * over-long sentences, reassembly, and property tests on random and invalid text. */
#include "translate/segment.h"

#include "core/json.h"
#include "test.h"
#include "tokenizer/tokenizer.h"
#include "translate/text.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_SEGS 32768

static struct hy_seg segs[MAX_SEGS];

/* ---- counters ---- */

static size_t count_one(void *ctx, const char *s, size_t len)
{
    (void)ctx, (void)s, (void)len;
    return 1; /* every unit fits and none merges: segments show the units */
}

static size_t count_chars(void *ctx, const char *s, size_t len)
{
    size_t n = 0;
    (void)ctx;
    for (size_t i = 0; i < len; n++) {
        int cl;
        text_decode((const unsigned char *)s + i, len - i, &cl);
        i += (size_t)cl;
    }
    return n;
}

/* Characters plus a pseudo-random 0..2: longer text may count fewer (not monotonic). */
static size_t count_noisy(void *ctx, const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return count_chars(ctx, s, len) + (size_t)(h % 3);
}

/* ---- hand cases ---- */

/* Splits text and writes the contents joined by '|' into buf. */
static const char *split_str(const char *text, size_t max, hy_seg_count_fn count, bool lines,
                             char *buf, size_t cap)
{
    struct hy_seg_opts o = {max, count, NULL, lines};
    size_t n, trail, at = 0;
    CHECK(hy_seg_split(text, strlen(text), &o, segs, MAX_SEGS, &n, &trail, NULL) == HY_OK);
    buf[0] = '\0';
    for (size_t i = 0; i < n && at + segs[i].len + 2 < cap; i++) {
        if (i)
            buf[at++] = '|';
        memcpy(buf + at, text + segs[i].off, segs[i].len);
        at += segs[i].len;
    }
    buf[at] = '\0';
    return buf;
}

#define SPLIT(text, max, count, lines, want)                                                       \
    do {                                                                                           \
        char buf_[4096];                                                                           \
        const char *got_ = split_str(text, max, count, lines, buf_, sizeof buf_);                  \
        CHECKF(strcmp(got_, want) == 0, "\n  got  [%s]\n  want [%s]", got_, want);                 \
    } while (0)

#define UNITS(text, want) SPLIT(text, 1, count_one, false, want)

static void test_sentences(void)
{
    UNITS("Hello world. This is a test! Is it? Yes.", "Hello world.|This is a test!|Is it?|Yes.");
    UNITS("Mr. Smith paid $3.14 for it. J. K. Rowling wrote e.g. this. Next one.",
          "Mr. Smith paid $3.14 for it.|J. K. Rowling wrote e.g. this.|Next one.");
    UNITS("He said \"Stop.\" Then left. (See below.) Ok",
          "He said \"Stop.\"|Then left.|(See below.)|Ok");
    UNITS("Wait... what? yes. OK", "Wait... what? yes.|OK");
    UNITS("Version 2. Released in 2019. Done", "Version 2.|Released in 2019.|Done");
    UNITS("Er sagte: „Komm.“ Dann ging er.", "Er sagte: „Komm.“|Dann ging er.");
    UNITS("Vraiment ?! Oui… Non.", "Vraiment ?!|Oui…|Non.");
    UNITS("你好。我很好！你呢？“好的。”他说；然后走了",
          "你好。|我很好！|你呢？|“好的。”|他说；|然后走了");
    UNITS("今日は晴れです。「本当？」と聞いた｡", "今日は晴れです。|「本当？」|と聞いた｡");
    UNITS("价格是３．５元。谢谢", "价格是３．５元。|谢谢");
    UNITS("مرحبا؟ كيف حالك. أنا بخير", "مرحبا؟|كيف حالك.|أنا بخير");
    UNITS("آپ کیسے ہیں؟ میں ٹھیک ہوں۔ شکریہ", "آپ کیسے ہیں؟|میں ٹھیک ہوں۔|شکریہ");
    UNITS("שלום. מה שלומך? טוב", "שלום.|מה שלומך?|טוב");
    UNITS("नमस्ते। आप कैसे हैं? मैं ठीक हूँ॥ धन्यवाद", "नमस्ते।|आप कैसे हैं?|मैं ठीक हूँ॥|धन्यवाद");
    UNITS("আমি ভালো আছি। তুমি?", "আমি ভালো আছি।|তুমি?");
    UNITS("བཀྲ་ཤིས་བདེ་ལེགས། ཁྱེད་རང་སྐུ་གཟུགས་བདེ་པོ་ཡིན་པས༎", "བཀྲ་ཤིས་བདེ་ལེགས།|ཁྱེད་རང་སྐུ་གཟུགས་བདེ་པོ་ཡིན་པས༎");
    UNITS("မင်္ဂလာပါ။ နေကောင်းလား။", "မင်္ဂလာပါ။|နေကောင်းလား။");
    UNITS("សួស្តី។ សុខសប្បាយទេ៕", "សួស្តី។|សុខសប្បាយទេ៕");
    UNITS("ᠮᠣᠩᠭᠣᠯ᠃ ᠪᠢᠴᠢᠭ", "ᠮᠣᠩᠭᠣᠯ᠃|ᠪᠢᠴᠢᠭ");
    UNITS("สวัสดีครับ ยินดีที่ได้รู้จัก", "สวัสดีครับ ยินดีที่ได้รู้จัก");
    UNITS("Привет. Как дела? Хорошо!", "Привет.|Как дела?|Хорошо!");
    UNITS("Line one\nLine two\n\nPara two.\r\nLast\rCR", "Line one|Line two|Para two.|Last|CR");
    UNITS("a\u2028b\u2029c", "a|b|c");
    UNITS("", "");
    UNITS(" \n\t\u3000 ", "");
    UNITS("x", "x");
}

static void test_separators(void)
{
    const char *text = "\u3000\u3000Title\n\n  First. Second.  \r\n\r\nEnd\n";
    struct hy_seg_opts o = {1, count_one, NULL, false};
    size_t n, trail;
    CHECK(hy_seg_split(text, strlen(text), &o, segs, MAX_SEGS, &n, &trail, NULL) == HY_OK);
    CHECK(n == 4);
    CHECK(segs[0].sep_off == 0 && segs[0].sep_len == 6 && segs[0].len == 5);
    CHECK(segs[1].sep_len == 4 && memcmp(text + segs[1].off, "First.", 6) == 0);
    CHECK(segs[2].sep_len == 1 && segs[2].len == 7);
    CHECK(memcmp(text + segs[3].sep_off, "  \r\n\r\n", 6) == 0 && segs[3].sep_len == 6);
    CHECK(trail == strlen(text) - 1);
}

static void test_merging(void)
{
    SPLIT("Aa. Bb. Cc. Dd.", 8, NULL, false, "Aa. Bb.|Cc. Dd.");
    SPLIT("Aa. Bb. Cc. Dd.", 100, NULL, false, "Aa. Bb. Cc. Dd.");
    SPLIT("Aa.\nBb.", 100, NULL, false, "Aa.\nBb.");
    SPLIT("Aa.\nBb.", 100, NULL, true, "Aa.|Bb.");
    SPLIT("Aa.\n\nBb.", 100, NULL, false, "Aa.|Bb.");
    SPLIT("Aa.\n \t\nBb.", 100, NULL, false, "Aa.|Bb.");
    SPLIT("Aa.\u2029Bb.", 100, NULL, false, "Aa.|Bb.");
    SPLIT("你好。我很好。你呢？", 21, NULL, false, "你好。我很好。|你呢？");
}

static void test_cutting(void)
{
    SPLIT("aaaa bbbb, cccc dddd eeee", 12, NULL, false, "aaaa bbbb,|cccc dddd|eeee");
    SPLIT("3,000,000 people came", 12, NULL, false, "3,000,000|people came");
    SPLIT("一二三四五六七八九十", 9, NULL, false, "一二三|四五六|七八九|十");
    SPLIT("一二三，四五六七八九十", 15, NULL, false, "一二三，|四五六七八|九十");
    SPLIT("e\u0301e\u0301e\u0301", 4, NULL, false, "e\u0301|e\u0301|e\u0301");
    SPLIT("\xF0\x9F\x98\x80", 2, NULL, false, "\xF0\x9F\x98\x80");
    SPLIT("สวัสดีครับ ยินดีที่ได้รู้จัก", 60, NULL, false, "สวัสดีครับ|ยินดีที่ได้รู้จัก");
    SPLIT("བཀྲ་ཤིས་བདེ་ལེགས", 30, NULL, false, "བཀྲ་ཤིས་|བདེ་ལེགས");
    SPLIT("abcdefghij", 4, count_chars, false, "abcd|efgh|ij");
    SPLIT("Short. A much longer sentence here.", 12, NULL, false,
          "Short.|A much|longer|sentence|here.");
}

static void test_nospace_and_errors(void)
{
    const char *text = "One. Two. Three. Four.";
    struct hy_seg_opts o = {1, count_one, NULL, false};
    struct hy_seg small[2];
    size_t n, trail;
    struct hy_err err = {{0}};
    CHECK(hy_seg_split(text, strlen(text), &o, small, 2, &n, &trail, &err) == HY_E_NOSPACE);
    CHECK(n == 4 && trail == strlen(text) && err.msg[0]);
    CHECK(small[1].off == 5 && small[1].len == 4);
    CHECK(hy_seg_split(text, strlen(text), &o, NULL, 0, &n, &trail, NULL) == HY_E_NOSPACE);
    CHECK(n == 4);
    o.max_tokens = 0;
    CHECK(hy_seg_split(text, strlen(text), &o, segs, MAX_SEGS, &n, &trail, NULL) == HY_E_RANGE);
}

/* A sentence cut at its very end: the splitter never reads past the text (found by
 * tests/fuzz/fuzz_segment; here the text ends at an unmapped page, so any build faults). */
static void test_end_of_text(void)
{
    static const char zh[] = "今天天气很好。我们去公园吧！\n\n他说：“好的。”";
    long page = sysconf(_SC_PAGESIZE);
    char *map = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    CHECK(map != MAP_FAILED && !mprotect(map + page, (size_t)page, PROT_NONE));
    if (map == MAP_FAILED)
        return;
    size_t len = sizeof zh - 1;
    char *t = map + page - len;
    memcpy(t, zh, len);
    for (size_t max = 1; max <= 12; max++)
        for (int lines = 0; lines < 2; lines++) {
            struct hy_seg_opts o = {max, NULL, NULL, lines};
            size_t n = 0, trail = 0;
            CHECK(hy_seg_split(t, len, &o, segs, MAX_SEGS, &n, &trail, NULL) == HY_OK && n > 0);
        }
    munmap(map, (size_t)page * 2);
}

static void test_join(void)
{
    const char *text = "  Hello.\n\nWorld.  ";
    struct hy_seg_opts o = {100, NULL, NULL, false};
    size_t n, trail, m;
    char buf[64];
    CHECK(hy_seg_split(text, strlen(text), &o, segs, MAX_SEGS, &n, &trail, NULL) == HY_OK);
    CHECK(n == 2);
    const char *outs[2] = {" \u3000Bonjour. \n", NULL};
    const size_t lens[2] = {strlen(outs[0]), 0};
    CHECK(hy_seg_join(text, strlen(text), segs, n, trail, outs, lens, buf, sizeof buf, &m, NULL) ==
          HY_OK);
    CHECK(m == 20 && memcmp(buf, "  Bonjour.\n\nWorld.  ", m) == 0);
    CHECK(hy_seg_join(text, strlen(text), segs, n, trail, NULL, NULL, buf, 5, &m, NULL) ==
          HY_E_NOSPACE);
    CHECK(m == strlen(text));
    const char *blank[2] = {"  ", "x"};
    const size_t blank_lens[2] = {2, 1};
    CHECK(hy_seg_join(text, strlen(text), segs, n, trail, blank, blank_lens, buf, sizeof buf, &m,
                      NULL) == HY_OK);
    CHECK(m == 7 && memcmp(buf, "  \n\nx  ", 7) == 0);
    struct hy_seg bad[2] = {segs[0], segs[1]};
    bad[1].sep_off++;
    CHECK(hy_seg_join(text, strlen(text), bad, 2, trail, NULL, NULL, buf, sizeof buf, &m, NULL) ==
          HY_E_INVAL);
    CHECK(hy_seg_join(text, strlen(text), segs, n, trail - 1, NULL, NULL, buf, sizeof buf, &m,
                      NULL) == HY_E_INVAL);
}

/* ---- property tests ---- */

struct rng {
    uint64_t s;
};

static uint32_t rnd(struct rng *r, uint32_t n)
{
    r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)((r->s >> 33) % n);
}

// clang-format off
static const char *const WORDS[] = {
    "Hello", "world", "Mr.", "e.g.", "3.14", "U.S.", "etc.", "said", "Ünïcödé", "naïve", "No.",
    "你好", "世界", "我们", "這個", "日本語", "です", "カタカナ", "한국어", "안녕", "Привет", "мир",
    "مرحبا", "سلام", "ٹھیک", "שלום", "नमस्ते", "मराठी", "বাংলা", "ગુજરાતી", "தமிழ்", "తెలుగు",
    "สวัสดี", "ครับ", "བཀྲ་ཤིས་", "မင်္ဂလာ", "សួស្តី", "ᠮᠣᠩᠭᠣᠯ", "e\u0301", "👍🏽", "👨‍👩‍👧",
    "🇨🇳", "\u200b", "a\u0308\u0323", "３．５", "x",
};
static const char *const PUNCT[] = {
    ".", "!", "?", "...", "…", "。", "！", "？", "；", "．", "؟", "۔", "।", "॥", "།", "༎",
    "။", "។", "៕", "᠃", ",", "，", "、", ":", "\"", "”", "」", ")", "“", "„", "’", "'", "⁉",
};
static const char *const SPACES[] = {
    " ", " ", " ", "  ", "\t", "\n", "\n\n", "\r\n", "\r", "\n \n", "\u00a0", "\u3000", "\u2028",
    "\u2029", "\f", "\r\n\r\n",
};
// clang-format on

#define NELEM(a) (sizeof a / sizeof a[0])

static size_t append_str(char *buf, size_t at, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (at + n > cap)
        return at;
    memcpy(buf + at, s, n);
    return at + n;
}

/* A random code point, UTF-8 encoded (surrogates excluded). */
static size_t append_cp(char *buf, size_t at, size_t cap, struct rng *r)
{
    uint32_t c = rnd(r, 4) ? rnd(r, 0x3000) : rnd(r, 0x10FFFF);
    if (c >= 0xD800 && c <= 0xDFFF)
        c = 'z';
    unsigned char e[4];
    size_t n = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    if (n == 1) {
        e[0] = (unsigned char)c;
    } else {
        for (size_t i = n - 1; i > 0; i--, c >>= 6)
            e[i] = (unsigned char)(0x80 | (c & 0x3F));
        e[0] = (unsigned char)((0xF00 >> n) | c);
    }
    if (at + n > cap)
        return at;
    memcpy(buf + at, e, n);
    return at + n;
}

/* A random document of up to cap bytes; raw random bytes when fuzz is set. */
static size_t random_doc(char *buf, size_t cap, struct rng *r, bool fuzz)
{
    size_t target = rnd(r, 3) ? rnd(r, 600) : rnd(r, (uint32_t)cap), at = 0;
    while (at < target) {
        uint32_t k = rnd(r, 100);
        if (fuzz && k < 30)
            buf[at++] = (char)rnd(r, 256);
        else if (k < 45)
            at = append_str(buf, at, cap, WORDS[rnd(r, NELEM(WORDS))]);
        else if (k < 65)
            at = append_str(buf, at, cap, PUNCT[rnd(r, NELEM(PUNCT))]);
        else if (k < 90)
            at = append_str(buf, at, cap, SPACES[rnd(r, NELEM(SPACES))]);
        else if (k < 95)
            at = append_cp(buf, at, cap, r);
        else
            for (int i = 0, n = (int)rnd(r, 40); i < n; i++)
                at = append_str(buf, at, cap, rnd(r, 2) ? "a" : "ไทย");
        if (at >= cap - 8)
            break;
    }
    return at;
}

/* Character boundaries of the lenient decoding (what "never inside a character" means). */
static void boundaries(const char *t, size_t len, bool *b)
{
    memset(b, 0, len + 1);
    for (size_t i = 0; i < len;) {
        int cl;
        b[i] = true;
        text_decode((const unsigned char *)t + i, len - i, &cl);
        i += (size_t)cl;
    }
    b[len] = true;
}

static bool all_space(const char *t, size_t off, size_t n)
{
    for (size_t i = off; i < off + n;) {
        int cl;
        if (!text_is_space(text_decode((const unsigned char *)t + i, off + n - i, &cl)))
            return false;
        i += (size_t)cl;
    }
    return true;
}

/* Line breaks in the content, and whether a whitespace run in it holds a paragraph break. */
static void content_breaks(const char *t, size_t off, size_t n, int *lines, bool *para)
{
    int run = 0;
    *lines = 0, *para = false;
    for (size_t i = off; i < off + n;) {
        int cl;
        uint32_t c = text_decode((const unsigned char *)t + i, off + n - i, &cl);
        if (c == '\r' && i + 1 < off + n && t[i + 1] == '\n')
            cl = 2;
        run = text_is_space(c) ? run + (c == 0x2029 ? 2 : text_is_newline(c)) : 0;
        *lines += text_is_newline(c);
        *para |= run >= 2;
        i += (size_t)cl;
    }
}

/* The last character of t[off, end). */
static uint32_t last_char(const char *t, size_t off, size_t end)
{
    uint32_t c = 0;
    for (size_t i = off; i < end;) {
        int cl;
        c = text_decode((const unsigned char *)t + i, end - i, &cl);
        i += (size_t)cl;
    }
    return c;
}

static int check_seg(const char *t, const struct hy_seg *g, const struct hy_seg_opts *o,
                     const bool *bound)
{
    int lines, bad = 0, cl;
    bool para;
    size_t end = g->off + g->len;
    bad += !(g->len >= 1 && bound[g->sep_off] && bound[g->off] && bound[end]);
    bad += !all_space(t, g->sep_off, g->sep_len);
    bad += text_is_space(text_decode((const unsigned char *)t + g->off, g->len, &cl));
    bad += text_is_space(last_char(t, g->off, end));
    size_t c = o->count ? o->count(o->ctx, t + g->off, g->len) : g->len;
    bad += c > o->max_tokens && count_chars(NULL, t + g->off, g->len) > 1;
    content_breaks(t, g->off, g->len, &lines, &para);
    bad += para || (o->keep_lines && lines > 0);
    return bad;
}

/* Every property of one split of t[0..len) (see the file comment). */
static void check_doc(const char *t, size_t len, const struct hy_seg_opts *o, bool *bound,
                      char *joined)
{
    size_t n, trail, expect = 0, m;
    hy_status st = hy_seg_split(t, len, o, segs, MAX_SEGS, &n, &trail, NULL);
    CHECKF(st == HY_OK, "%s", hy_status_str(st));
    if (st != HY_OK)
        return;
    boundaries(t, len, bound);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        const struct hy_seg *g = &segs[i];
        bad += g->sep_off != expect || g->off != g->sep_off + g->sep_len;
        expect = g->off + g->len;
        bad += check_seg(t, g, o, bound);
        /* with exact (byte) counts, two segments of a paragraph did not fit together */
        if (i > 0 && o->count == NULL && !o->keep_lines) {
            int lines;
            bool para;
            content_breaks(t, g->sep_off, g->sep_len, &lines, &para);
            bad += !para && segs[i - 1].len + g->sep_len + g->len <= o->max_tokens;
        }
    }
    CHECKF(bad == 0, "%d bad segments (max %zu)", bad, o->max_tokens);
    CHECK(trail == expect && all_space(t, trail, len - trail));
    CHECK(hy_seg_join(t, len, segs, n, trail, NULL, NULL, joined, len, &m, NULL) == HY_OK);
    CHECK(m == len && memcmp(joined, t, len) == 0);
    if (n > 1) { /* too small an array: the count needed, the first ones written */
        struct hy_seg first = segs[0];
        size_t n2, trail2;
        CHECK(hy_seg_split(t, len, o, segs, n / 2, &n2, &trail2, NULL) == HY_E_NOSPACE);
        CHECK(n2 == n && trail2 == trail && memcmp(&segs[0], &first, sizeof first) == 0);
    }
}

static void test_random(bool fuzz, int docs, uint64_t seed)
{
    enum { CAP = 20000 };
    static char text[CAP], joined[CAP];
    static bool bound[CAP + 1];
    struct rng r = {seed};
    const hy_seg_count_fn counters[4] = {NULL, count_chars, count_noisy, count_one};
    const size_t lo[4] = {4, 1, 3, 1}, span[4] = {300, 100, 100, 1};
    for (int k = 0; k < docs; k++) {
        size_t len = random_doc(text, CAP, &r, fuzz);
        int which = (int)rnd(&r, 4);
        struct hy_seg_opts o = {lo[which] + rnd(&r, (uint32_t)span[which]), counters[which], NULL,
                                rnd(&r, 4) == 0};
        check_doc(text, len, &o, bound, joined);
    }
}

/* Tokens of s by a real tokenizer (ctx), as the translate layer counts them. */
static size_t count_tokens(void *ctx, const char *s, size_t len)
{
    size_t n = 0;
    int32_t none;
    hy_status st = hy_tok_encode(ctx, s, len, false, &none, 0, &n, NULL);
    return st == HY_OK || st == HY_E_NOSPACE ? n : len;
}

/* The multilingual tokenizer corpus (every script of the language table, long words,
 * emoji, odd whitespace) as one document, split with both tiny tokenizers' counts. */
static void test_real_tokenizer(void)
{
    static char doc[1 << 20], joined[1 << 20];
    static bool bound[(1 << 20) + 1];
    char path[512];
    struct hy_err err = {{0}};
    json_t *corpus = NULL;
    test_path(path, sizeof path, "HYMT_SRC", "tests/tokenizer/corpus.json");
    hy_status st = hy_json_load_file(&corpus, path, 16u << 20, &err);
    CHECKF(st == HY_OK, "%s", err.msg);
    if (st != HY_OK)
        return;
    size_t len = 0;
    for (size_t i = 0; i < json_array_size(corpus); i++) {
        const json_t *line = json_array_get(corpus, i);
        size_t n = json_string_length(line);
        if (len + n + 3 > sizeof doc)
            break;
        memcpy(doc + len, json_string_value(line), n);
        len += n;
        len = append_str(doc, len, sizeof doc, i % 7 == 0 ? "\n\n" : i % 3 ? " " : "\n");
    }
    static const char *const dirs[] = {"tests/data/tiny-mqa", "tests/data/tiny-dense18"};
    for (size_t k = 0; k < 2; k++) {
        struct hy_tok *tok = NULL;
        test_path(path, sizeof path, "HYMT_SRC", dirs[k]);
        CHECKF(hy_tok_load(&tok, path, &err) == HY_OK, "%s", err.msg);
        if (!tok)
            continue;
        const size_t maxes[] = {8, 64, 512};
        for (size_t m = 0; m < 3; m++) {
            struct hy_seg_opts o = {maxes[m], count_tokens, tok, m == 1};
            check_doc(doc, len, &o, bound, joined);
        }
        hy_tok_destroy(tok);
    }
    json_decref(corpus);
}

int main(void)
{
    test_sentences();
    test_separators();
    test_merging();
    test_cutting();
    test_nospace_and_errors();
    test_join();
    test_end_of_text();
    test_random(false, 3000, 1);
    test_random(true, 2000, 2);
    test_real_tokenizer();
    return test_result();
}
