/* tok_errors_test.c: every malformed or unsupported tokenizer.json is a load error with the
 * right status and a message that names the file and the construct; nothing loads with a
 * silent difference. */
#include "tokenizer/tok_test_util.h"

#include <sys/stat.h>

#define BL_DECODER "{\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"trim_offsets\": true}"

/* Parts of a small valid tokenizer.json; NULL keeps the default. */
struct parts {
    const char *version, *truncation, *padding, *added, *normalizer, *pre, *decoder, *model;
    const char *vocab, *merges, *model_opts;
};

static char *doc(const struct parts *p)
{
    struct tt_str b = {0};
    tt_addf(&b, "{\"version\": %s, \"truncation\": %s, \"padding\": %s, \"added_tokens\": %s, ",
            p->version ? p->version : "\"1.0\"", p->truncation ? p->truncation : "null",
            p->padding ? p->padding : "null", p->added ? p->added : "[]");
    tt_addf(&b, "\"normalizer\": %s, \"pre_tokenizer\": %s, \"post_processor\": null, ",
            p->normalizer ? p->normalizer : "null",
            p->pre ? p->pre
                   : "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
                     "\"trim_offsets\": true}");
    tt_addf(&b, "\"decoder\": %s, ", p->decoder ? p->decoder : BL_DECODER);
    if (p->model)
        tt_addf(&b, "\"model\": %s}", p->model);
    else
        tt_addf(&b, "\"model\": {\"type\": \"BPE\", %s\"vocab\": %s, \"merges\": %s}}",
                p->model_opts ? p->model_opts : "",
                p->vocab ? p->vocab : "{\"a\": 0, \"b\": 1, \"ab\": 2}",
                p->merges ? p->merges : "[\"a b\"]");
    return b.s;
}

static void bad_at(struct tt *t, const char *json, hy_status want, const char *substr, int line)
{
    struct hy_err err = {{0}};
    hy_status st;
    struct tt_tok k = tt_try(t, json, &st, &err);
    CHECKF(st == want && strstr(err.msg, substr) && strstr(err.msg, k.path),
           "line %d: got %s \"%s\", want %s with \"%s\"", line, hy_status_str(st), err.msg,
           hy_status_str(want), substr);
    hy_tok_destroy(k.tok);
}
#define BAD(t, json, want, substr) bad_at(t, json, want, substr, __LINE__)
#define BAD_PARTS(t, want, substr, ...)                                                            \
    do {                                                                                           \
        char *j_ = doc(&(struct parts){__VA_ARGS__});                                              \
        bad_at(t, j_, want, substr, __LINE__);                                                     \
        free(j_);                                                                                  \
    } while (0)

static void check_top_and_model(struct tt *t)
{
    BAD(t, "not json", HY_E_FORMAT, "invalid JSON");
    BAD(t, "[1, 2]", HY_E_FORMAT, "expected a JSON object");
    BAD_PARTS(t, HY_E_UNSUPPORTED, "version", .version = "\"2.0\"");
    BAD_PARTS(t, HY_E_UNSUPPORTED, "truncation", .truncation = "{\"max_length\": 5}");
    BAD_PARTS(t, HY_E_UNSUPPORTED, "padding", .padding = "{\"strategy\": {\"Fixed\": 8}}");
    BAD_PARTS(t, HY_E_FORMAT, "model: expected an object", .model = "null");
    BAD_PARTS(t, HY_E_UNSUPPORTED, "model type \"WordPiece\"",
              .model = "{\"type\": \"WordPiece\", \"vocab\": {}}");
    BAD_PARTS(t, HY_E_FORMAT, "missing vocab or merges",
              .model = "{\"type\": \"BPE\", "
                       "\"vocab\": {}}");
    BAD_PARTS(t, HY_E_FORMAT, "model.vocab[\"a\"]", .vocab = "{\"a\": \"0\"}", .merges = "[]");
    BAD_PARTS(t, HY_E_FORMAT, "model.vocab[\"a\"]", .vocab = "{\"a\": -1}", .merges = "[]");
    BAD_PARTS(t, HY_E_FORMAT, "model.vocab[\"a\"]", .vocab = "{\"a\": 16777216}", .merges = "[]");
    BAD_PARTS(t, HY_E_FORMAT, "share id 0", .vocab = "{\"a\": 0, \"b\": 0}", .merges = "[]");
    BAD_PARTS(t, HY_E_FORMAT, "model.merges[0]", .merges = "[\"a b c\"]");
    BAD_PARTS(t, HY_E_FORMAT, "model.merges[0]", .merges = "[\"ab\"]");
    BAD_PARTS(t, HY_E_FORMAT, "model.merges[0]", .merges = "[[\"a\"]]");
    BAD_PARTS(t, HY_E_FORMAT, "model.merges[1]", .merges = "[\"a b\", [\"a\", \"b\"]]");
    BAD_PARTS(t, HY_E_FORMAT, "\"c\" is not in the vocab", .merges = "[\"a c\"]");
    BAD_PARTS(t, HY_E_FORMAT, "\"ab\" is not in the vocab", .vocab = "{\"a\": 0, \"b\": 1}");
    /* empty halves (the first merge " " or ["", ""]): an error, not a copy into no buffer */
    BAD_PARTS(t, HY_E_FORMAT, "\"\" is not in the vocab", .merges = "[\" \"]");
    BAD_PARTS(t, HY_E_FORMAT, "\"\" is not in the vocab", .merges = "[[\"\", \"\"]]");
    BAD_PARTS(t, HY_E_UNSUPPORTED, "model.dropout", .model_opts = "\"dropout\": 0.1, ");
    BAD_PARTS(t, HY_E_UNSUPPORTED, "byte_fallback", .model_opts = "\"byte_fallback\": true, ");
    BAD_PARTS(t, HY_E_UNSUPPORTED, "continuing_subword_prefix",
              .model_opts = "\"continuing_subword_prefix\": \"##\", ");
    BAD_PARTS(t, HY_E_UNSUPPORTED, "end_of_word_suffix",
              .model_opts = "\"end_of_word_suffix\": \"</w>\", ");
    BAD_PARTS(t, HY_E_FORMAT, "unk_token", .model_opts = "\"unk_token\": \"<unk>\", ");
    BAD_PARTS(t, HY_E_FORMAT, "ignore_merges", .model_opts = "\"ignore_merges\": 1, ");
}

static void check_pipeline(struct tt *t)
{
    BAD_PARTS(t, HY_E_UNSUPPORTED, "\"Lowercase\"", .normalizer = "{\"type\": \"Lowercase\"}");
    BAD_PARTS(t, HY_E_UNSUPPORTED, "\"NFKC\"",
              .normalizer = "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}, "
                            "{\"type\": \"NFKC\"}]}");
    BAD_PARTS(t, HY_E_FORMAT, "missing \"type\"", .normalizer = "{}");
    BAD_PARTS(t, HY_E_UNSUPPORTED, "\"Metaspace\"",
              .pre = "{\"type\": \"Metaspace\", \"replacement\": \"_\"}");
    BAD_PARTS(t, HY_E_FORMAT, "bad regex",
              .pre = "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\"}, \"behavior\": "
                     "\"Isolated\", \"invert\": false}");
    BAD_PARTS(t, HY_E_FORMAT, "invert",
              .pre = "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"a\"}, \"behavior\": "
                     "\"Isolated\"}");
    BAD_PARTS(t, HY_E_FORMAT, "\"Sideways\"",
              .pre = "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"a\"}, \"behavior\": "
                     "\"Sideways\", \"invert\": false}");
    BAD_PARTS(t, HY_E_FORMAT, "pattern",
              .pre = "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"a\", \"String\": \"a\"}, "
                     "\"behavior\": \"Isolated\", \"invert\": false}");
    BAD_PARTS(t, HY_E_FORMAT, "add_prefix_space", .pre = "{\"type\": \"ByteLevel\"}");
    BAD_PARTS(t, HY_E_FORMAT, "pretokenizers", .pre = "{\"type\": \"Sequence\"}");
    BAD_PARTS(t, HY_E_UNSUPPORTED, "decoder null", .decoder = "null");
    BAD_PARTS(t, HY_E_UNSUPPORTED, "\"WordPiece\"", .decoder = "{\"type\": \"WordPiece\"}");
    BAD_PARTS(t, HY_E_UNSUPPORTED, "Sequence",
              .decoder = "{\"type\": \"Sequence\", \"decoders\": [" BL_DECODER ", "
                         "{\"type\": \"Fuse\"}]}");
    BAD_PARTS(t, HY_E_FORMAT, "decoder ByteLevel",
              .decoder = "{\"type\": \"ByteLevel\", \"trim_offsets\": \"yes\"}");
}

static void check_added(struct tt *t)
{
    BAD_PARTS(t, HY_E_FORMAT, "added_tokens", .added = "{}");
    BAD_PARTS(t, HY_E_FORMAT, "added_tokens[0]", .added = "[5]");
    BAD_PARTS(t, HY_E_FORMAT, "content", .added = "[{\"id\": 3, \"content\": 5}]");
    BAD_PARTS(t, HY_E_FORMAT, "special",
              .added = "[{\"id\": 3, \"content\": \"<s>\", \"single_word\": false, \"lstrip\": "
                       "false, \"rstrip\": false, \"normalized\": false}]");
}

static void check_paths_and_good(struct tt *t)
{
    struct hy_err err = {{0}};
    struct hy_tok *tok = NULL;
    char path[160];
    snprintf(path, sizeof path, "%s/missing.json", t->dir);
    CHECK(hy_tok_load(&tok, path, &err) == HY_E_IO && strstr(err.msg, "missing.json"));
    CHECK(hy_tok_load(&tok, t->dir, &err) == HY_E_IO && strstr(err.msg, "tokenizer.json"));
    /* a folder holding tokenizer.json loads, and so do Sequences of supported pieces */
    char *good = doc(&(struct parts){
        .normalizer = "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}]}",
        .decoder = "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"ByteLevel\"}]}",
        .padding = "{\"strategy\": \"BatchLongest\", \"pad_to_multiple_of\": null}",
        .model_opts = "\"dropout\": 0.0, \"continuing_subword_prefix\": \"\", "});
    snprintf(path, sizeof path, "%s/tokenizer.json", t->dir);
    FILE *f = fopen(path, "wb");
    HY_ASSERT(f && fputs(good, f) >= 0 && fclose(f) == 0);
    hy_status st = hy_tok_load(&tok, t->dir, &err);
    CHECKF(st == HY_OK, "%s", err.msg);
    hy_tok_destroy(tok);
    unlink(path);
    free(good);
}

int main(void)
{
    struct tt t;
    tt_init(&t);
    check_top_and_model(&t);
    check_pipeline(&t);
    check_added(&t);
    check_paths_and_good(&t);
    tt_cleanup(&t);
    return test_result();
}
