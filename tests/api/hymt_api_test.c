/* hymt_api_test.c: the embedding walk-through of include/hymt.h, compiled against that one
 * header: load the tiny checkpoint, start an engine, run one request and a document, and
 * stream text through the detokenizer. */
#include "hymt.h"
#include "test.h"

#include <string.h>

static hy_status count_bytes(void *ctx, const char *s, size_t n, struct hy_err *err)
{
    (void)s;
    (void)err;
    *(size_t *)ctx += n;
    return HY_OK;
}

int main(void)
{
    char dir[4096];
    test_path(dir, sizeof dir, "HYMT_SRC", "tests/data/tiny-mqa");
    struct hy_err err = {{0}};
    struct hy_backend *be = NULL;
    struct hy_model *m = NULL;
    struct hy_tok *tok = NULL;
    struct hy_engine *e = NULL;
    struct hy_engine_params p = hy_engine_params_default();
    p.kv_bytes = 16 << 20;
    CHECK(hy_cpu_backend_create(&be, 0, &err) == HY_OK);
    CHECKF(hy_model_load(&m, dir, be, &err) == HY_OK, "%s", err.msg);
    CHECKF(hy_tok_load(&tok, dir, &err) == HY_OK, "%s", err.msg);
    CHECKF(m && hy_engine_create(&e, m, &p, &err) == HY_OK, "%s", err.msg);
    if (e && tok) {
        int32_t prompt[64], ids[16];
        size_t n = 0;
        CHECK(hy_tok_encode(tok, "Hello, world", 12, false, prompt, 64, &n, &err) == HY_OK);
        struct hy_engine_request r = {.prompt = prompt, .n_prompt = (int)n, .max_new_tokens = 8,
                                      .sampling = hy_sampler_params_default()};
        uint64_t h;
        CHECK(hy_engine_submit(e, &r, &h, &err) == HY_OK);
        struct hy_detok d;
        hy_detok_init(&d, tok, true);
        struct hy_engine_status st = {0};
        int got = 0;
        char text[8 * HY_DETOK_MAX_OUT];
        size_t tl = 0;
        for (int k; (k = hy_engine_read(e, h, ids, 16, 5.0, &st)) > 0 || !st.done;) {
            CHECK(k >= 0);
            if (k < 0)
                break;
            for (int i = 0; i < k; i++)
                tl += (size_t)hy_detok_push(&d, ids[i], text + tl, sizeof text - tl);
            got += k;
        }
        CHECK(got == 8 && st.done && st.finish == HY_FINISH_LENGTH);
        hy_engine_release(e, h);
        size_t bytes = 0;
        struct hy_doc_opts o = {.tgt = hy_lang_find("English"), .write = count_bytes,
                                .write_ctx = &bytes, .max_new_tokens = 4,
                                .sampling = hy_sampler_params_default()};
        struct hy_doc_result res;
        /* 这 is simplified-only: text of characters both forms share (你好) may be detected
         * as either zh or zh-Hant (lang_detect.c, rules 6-7) */
        static const char doc[] = "这是第一段。\n\n这是第二段！";
        CHECK(hy_doc_translate(e, tok, doc, sizeof doc - 1, &o, &res, &err) == HY_OK);
        CHECK(res.segments == 2 && bytes > 2 && res.src && !strcmp(res.src->code, "zh"));
    }
    hy_engine_destroy(e);
    hy_tok_destroy(tok);
    hy_model_destroy(m);
    if (be)
        be->i->destroy(be);
    return test_result();
}
