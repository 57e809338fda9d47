/* cmd_convert.c: `hymt convert`: a Hugging Face checkpoint folder to a GGUF file that
 * llama.cpp loads (and hymt: -m FILE.gguf). Tensor names and layout follow llama.cpp's
 * hunyuan-dense (model doc 3.4): ggml dims are the safetensors shape reversed, the bytes of a
 * row-major [out, in] matrix are already in ggml order, and no q/k permutation is applied.
 * Which type each tensor gets (what llama.cpp does):
 *   every 1-D tensor (the norms): F32;
 *   f32 / f16 / bf16: all matrices in that type (convert_hf_to_gguf --outtype);
 *   q8_0: all matrices Q8_0 (F16 when in-features are not a multiple of 32);
 *   q4_0 / q4_k_m (llama-quantize's llama_tensor_get_type): the head (output.weight, or
 *     token_embd.weight when the head is tied) Q6_K (Q8_0 when in-features are not a
 *     multiple of 256); for q4_k_m also attn_v and ffn_down Q6_K in the layers where
 *     use_more_bits(i, n) holds (i < n/8, i >= 7n/8, or (i - n/8) % 3 == 2); all other
 *     matrices Q4_0 / Q4_K. Fallback when in-features do not fit the block: Q6_K -> Q8_0,
 *     Q4_K -> Q8_0 (llama.cpp uses Q5_0, which hymt does not have), Q4_0 -> F16.
 * A tied config's stored lm_head.weight is dropped, as llama.cpp does (a warning says so
 * when it differs from embed_tokens: such a GGUF then computes other logits than the
 * safetensors model, which uses the stored head as transformers does). */
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/load.h"
#include "cli/convert.h"
#include "core/globals.h"

#include "core/json.h"
#include "core/log.h"
#include "formats/safetensors.h"
#include "model/hunyuan.h"
#include "tokenizer/tokenizer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
    "usage: hymt convert -m MODEL -o FILE.gguf [--type TYPE] [--force]\n"
    "\n"
    "Converts a Hugging Face checkpoint folder (config.json, safetensors, tokenizer.json) to\n"
    "one GGUF file in llama.cpp's hunyuan-dense (or, for hy_v3, hy_v3) layout, tokenizer and\n"
    "chat template included\n"
    "(a folder without tokenizer.json gives a GGUF without a tokenizer, with a warning).\n"
    "Every hymt command loads it with -m FILE.gguf; llama.cpp loads it too.\n"
    "\n"
    "options:\n"
    "  -m, --model MODEL   checkpoint folder or Hugging Face repo id (ORG/NAME[@REV], from\n"
    "                      the hub cache) of safetensors weights\n"
    "  -o, --output FILE   the GGUF file to write (written to FILE.tmp-PID, renamed at the end)\n"
    "  --type TYPE         bf16 (default), f16, f32, q8_0, q4_0 or q4_k_m; norms stay F32;\n"
    "                      q4_k_m puts the head and some attn_v / ffn_down layers in Q6_K,\n"
    "                      as llama-quantize does\n"
    "  --force             overwrite FILE when it exists\n"
    "  -h, --help          this text\n";

static const struct cli_cmd cmd = {"convert", usage};

static const char *const type_names[] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_k_m"};

static bool use_more_bits(int i, int n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

static bool fits(uint32_t t, uint64_t ne0)
{
    uint64_t be = 1, bb = 0;
    return hy_ggml_type_info(t, &be, &bb) && ne0 % be == 0;
}

/* The ggml type of tensor `kind` ("attn_v", "output", ...) of layer i (-1 outside layers). */
static uint32_t pick_type(enum hy_convert_type ty, const char *kind, int n_dims, uint64_t ne0,
                          int i, int n_layers, bool is_head)
{
    if (n_dims == 1 || ty == HY_CONVERT_F32)
        return HY_GGML_F32;
    if (ty == HY_CONVERT_F16)
        return HY_GGML_F16;
    if (ty == HY_CONVERT_BF16)
        return HY_GGML_BF16;
    if (ty == HY_CONVERT_Q8_0)
        return fits(HY_GGML_Q8_0, ne0) ? HY_GGML_Q8_0 : HY_GGML_F16;
    uint32_t t = ty == HY_CONVERT_Q4_0 ? HY_GGML_Q4_0 : HY_GGML_Q4_K;
    if (is_head)
        t = HY_GGML_Q6_K;
    else if (ty == HY_CONVERT_Q4_K_M && i >= 0 && (!strcmp(kind, "attn_v") || !strcmp(kind, "ffn_down")) &&
             use_more_bits(i, n_layers))
        t = HY_GGML_Q6_K;
    if (!fits(t, ne0))
        t = t == HY_GGML_Q4_0 ? HY_GGML_F16 : HY_GGML_Q8_0;
    return fits(t, ne0) ? t : HY_GGML_F16;
}

struct plan_t {
    char name[HY_GGUF_MAX_NAME];
    const struct hy_st_tensor *src;
    uint32_t type;
};

struct conv {
    const char *model, *out, *type_name;
    const char *name; /* the model's name (general.name): repo id or folder name */
    bool force;
    enum hy_convert_type type;
    struct hy_config cfg;
    struct hy_st *st;
    struct hy_tok *tok;
    json_t *tok_json, *tok_config, *gen_config;
    char *chat_template;
    struct plan_t *plan;
    int n_plan;
};

static hy_status add_plan(struct conv *c, const char *gguf, const char *hf, const char *kind,
                          int layer, bool is_head, struct hy_err *err)
{
    const struct hy_st_tensor *t = hy_st_find(c->st, hf);
    if (!t)
        return hy_err_set(err, HY_E_FORMAT, "%s: missing tensor %s", c->model, hf);
    if (t->n_dims < 1 || t->n_dims > 2 || (t->dtype != HY_DTYPE_F32 && t->dtype != HY_DTYPE_F16 &&
                                           t->dtype != HY_DTYPE_BF16))
        return hy_err_set(err, HY_E_UNSUPPORTED, "%s: tensor %s: %d dims of %s (convert reads "
                          "1-D or 2-D F32/F16/BF16)", c->model, hf, t->n_dims,
                          hy_dtype_name(t->dtype));
    struct plan_t *p = &c->plan[c->n_plan++];
    snprintf(p->name, sizeof p->name, "%s", gguf);
    p->src = t;
    p->type = pick_type(c->type, kind, t->n_dims, (uint64_t)t->shape[t->n_dims - 1], layer,
                        (int)c->cfg.num_hidden_layers, is_head);
    return HY_OK;
}

static hy_status make_plan(struct conv *c, struct hy_err *err)
{
    struct hy_layer_tensor layer[HY_LAYER_TENSORS]; /* names only */
    hy_layer_tensors(&c->cfg, NULL, layer);
    int nl = (int)c->cfg.num_hidden_layers;
    bool tied = c->cfg.tie_word_embeddings;
    c->plan = calloc((size_t)nl * HY_LAYER_TENSORS + 3, sizeof *c->plan);
    if (!c->plan)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    hy_status s = add_plan(c, "token_embd.weight", "model.embed_tokens.weight", "token_embd", -1,
                           tied, err);
    if (!s)
        s = add_plan(c, "output_norm.weight", "model.norm.weight", "output_norm", -1, false, err);
    if (!s && !tied)
        s = add_plan(c, "output.weight", "lm_head.weight", "output", -1, true, err);
    const struct hy_st_tensor *lm = hy_st_find(c->st, "lm_head.weight");
    if (!s && tied && lm) {
        const struct hy_st_tensor *e = c->plan[0].src;
        if (lm->nbytes != e->nbytes || memcmp(lm->data, e->data, e->nbytes))
            HY_LOGW("%s: the config ties the head, but the stored lm_head.weight differs from "
                    "embed_tokens; it is dropped, as llama.cpp does", c->model);
    }
    for (int i = 0; i < nl && !s; i++)
        for (int k = 0; k < HY_LAYER_TENSORS && !s; k++) {
            char g[HY_GGUF_MAX_NAME], h[HY_ST_MAX_NAME];
            snprintf(g, sizeof g, "blk.%d.%s.weight", i, layer[k].gguf);
            snprintf(h, sizeof h, "model.layers.%d.%s.weight", i, layer[k].hf);
            s = add_plan(c, g, h, layer[k].gguf, i, false, err);
        }
    return s;
}

static hy_status read_json_opt(const char *dir, const char *file, json_t **out, struct hy_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    *out = NULL;
    if (access(path, F_OK) != 0)
        return HY_OK;
    return hy_json_load_file(out, path, HY_TOK_MAX_FILE, err);
}

/* chat_template: tokenizer_config.json's string, else chat_template.jinja. */
static hy_status read_template(struct conv *c, struct hy_err *err)
{
    const json_t *t = json_object_get(c->tok_config, "chat_template");
    if (json_is_string(t))
        return (c->chat_template = strdup(json_string_value(t))) ? HY_OK
                                                                  : hy_err_set(err, HY_E_NOMEM, "out of memory");
    char path[4096];
    snprintf(path, sizeof path, "%s/chat_template.jinja", c->model);
    FILE *f = fopen(path, "rb");
    if (!f)
        return HY_OK;
    c->chat_template = calloc(1, 1 << 20);
    size_t n = c->chat_template ? fread(c->chat_template, 1, (1 << 20) - 1, f) : 0;
    bool more = fgetc(f) != EOF;
    fclose(f);
    if (!c->chat_template)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    c->chat_template[n] = 0;
    return more ? hy_err_set(err, HY_E_RANGE, "%s: larger than 1 MiB", path) : HY_OK;
}

static hy_status open_sources(struct conv *c, struct hy_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", c->model);
    hy_status s = hy_config_load(&c->cfg, path, err);
    if (!s)
        s = hy_st_open(&c->st, c->model, err);
    snprintf(path, sizeof path, "%s/tokenizer.json", c->model);
    bool have_tok = access(path, F_OK) == 0;
    if (!s && !have_tok)
        HY_LOGW("%s: no tokenizer.json: the GGUF gets no tokenizer (hymt loads it for token ids; "
                "llama.cpp needs a vocabulary)", c->model);
    if (!s && have_tok)
        s = hy_tok_load(&c->tok, c->model, err);
    if (!s && have_tok)
        s = hy_json_load_file(&c->tok_json, path, HY_TOK_MAX_FILE, err);
    if (!s)
        s = read_json_opt(c->model, "tokenizer_config.json", &c->tok_config, err);
    if (!s)
        s = read_json_opt(c->model, "generation_config.json", &c->gen_config, err);
    if (!s)
        s = read_template(c, err);
    return s;
}

/* Streams tensor p's data converted to its type, a row at a time. */
static hy_status write_tensor(struct hy_gguf_w *w, const struct plan_t *p, float *row, void *out,
                              struct hy_err *err)
{
    const struct hy_st_tensor *t = p->src;
    int64_t cols = t->shape[t->n_dims - 1], rows = t->n_dims == 2 ? t->shape[0] : 1;
    int dt = hy_ggml_to_dtype(p->type);
    HY_ASSERT(dt >= 0);
    size_t src_rb = hy_dtype_row_bytes(t->dtype, cols), dst_rb = hy_ggml_nbytes(p->type, (uint64_t)cols);
    const unsigned char *src = t->data;
    for (int64_t r = 0; r < rows; r++) {
        const void *bytes = src + (size_t)r * src_rb;
        if ((enum hy_dtype)dt != t->dtype) {
            hy_dtype_to_f32(row, bytes, t->dtype, (size_t)cols);
            hy_dtype_from_f32(out, row, (enum hy_dtype)dt, (size_t)cols);
            bytes = out;
        }
        hy_status s = hy_gguf_w_data(w, bytes, dst_rb, err);
        if (s)
            return s;
    }
    return HY_OK;
}

static hy_status write_gguf(struct conv *c, const char *path, struct hy_err *err)
{
    struct hy_gguf_w *w = NULL;
    const char *name = c->name;
    struct hy_convert_src src = {&c->cfg, c->tok_json, c->tok_config, c->gen_config,
                                 c->chat_template};
    hy_status s = hy_gguf_w_open(&w, path, err);
    if (s)
        return s;
    s = hy_convert_model_meta(w, &c->cfg, name, c->type, err);
    if (!s && c->tok)
        s = hy_convert_tokenizer_meta(w, &src, c->tok, err);
    int64_t maxc = 1;
    for (int i = 0; i < c->n_plan && !s; i++) {
        const struct hy_st_tensor *t = c->plan[i].src;
        uint64_t ne[2] = {(uint64_t)t->shape[t->n_dims - 1], t->n_dims == 2 ? (uint64_t)t->shape[0] : 1};
        maxc = ne[0] > (uint64_t)maxc ? (int64_t)ne[0] : maxc;
        s = hy_gguf_w_tensor(w, c->plan[i].name, c->plan[i].type, t->n_dims, ne, err);
    }
    if (!s)
        s = hy_gguf_w_begin_data(w, err);
    float *row = malloc((size_t)maxc * sizeof *row);
    void *out = malloc((size_t)maxc * sizeof *row);
    if (!s && (!row || !out))
        s = hy_err_set(err, HY_E_NOMEM, "out of memory");
    /* a line redrawn on a terminal; in a log or a pipe one line per 10% of the tensors */
    const bool tty = isatty(STDERR_FILENO) && hy_log_level >= HY_LOG_INFO;
    int decile = 0;
    for (int i = 0; i < c->n_plan && !s; i++) {
        const struct plan_t *p = &c->plan[i];
        if (tty)
            fprintf(stderr, "\rhymt convert: [%d/%d] %-32s %-5s", i + 1, c->n_plan, p->name,
                    hy_ggml_type_name(p->type));
        s = write_tensor(w, p, row, out, err);
        if (!tty && !s && hy_log_level >= HY_LOG_INFO && (i + 1) * 10 / c->n_plan > decile) {
            decile = (i + 1) * 10 / c->n_plan;
            fprintf(stderr, "hymt convert: %d%% (%d of %d tensors)\n", decile * 10, i + 1,
                    c->n_plan);
        }
    }
    if (tty)
        fprintf(stderr, "\n");
    free(row);
    free(out);
    if (s) {
        hy_gguf_w_abort(w);
        return s;
    }
    return hy_gguf_w_finish(w, err);
}

static void conv_free(struct conv *c)
{
    hy_st_close(c->st);
    hy_tok_destroy(c->tok);
    json_decref(c->tok_json);
    json_decref(c->tok_config);
    json_decref(c->gen_config);
    free(c->chat_template);
    free(c->plan);
}

static int parse(struct conv *c, int argc, char **argv)
{
    struct cli_opt opts[] = {
        {"m|model", CLI_STR, &c->model, 0, 0, false},
        {"o|output", CLI_STR, &c->out, 0, 0, false},
        {"type", CLI_STR, &c->type_name, 0, 0, false},
        {"force", CLI_FLAG, &c->force, 0, 0, false},
    };
    const char *pos[1];
    int n_pos;
    int r = cli_parse(&cmd, argc, argv, opts, sizeof opts / sizeof opts[0], pos, 0, &n_pos);
    if (r)
        return r;
    if (!c->model || !c->out)
        return cli_fail(&cmd, "-m MODEL and -o FILE.gguf are required");
    c->type = HY_CONVERT_BF16;
    if (c->type_name) {
        size_t k = 0;
        while (k < sizeof type_names / sizeof type_names[0] && strcmp(c->type_name, type_names[k]))
            k++;
        if (k == sizeof type_names / sizeof type_names[0])
            return cli_fail(&cmd, "--type must be bf16, f16, f32, q8_0, q4_0 or q4_k_m, not '%s'",
                            c->type_name);
        c->type = (enum hy_convert_type)k;
    }
    struct stat sb;
    if (!c->force && stat(c->out, &sb) == 0)
        return cli_fail(&cmd, "%s exists (--force overwrites it)", c->out);
    return CLI_OK;
}

int cmd_convert(int argc, char **argv)
{
    struct conv c = {0};
    int r = parse(&c, argc, argv);
    if (r)
        return r == CLI_HELP ? 0 : 2;
    static struct cli_model mp;
    if (cli_model_resolve(&cmd, c.model, &mp))
        return 1;
    c.model = mp.path;
    c.name = mp.name;
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp-%d", c.out, (int)getpid()) >= (int)sizeof tmp)
        return cli_fail(&cmd, "output path too long");
    struct hy_err err = {{0}};
    hy_status s = open_sources(&c, &err);
    if (!s && c.cfg.arch == HY_ARCH_HYV3) { /* llama.cpp's hy_v3 layout: convert_hyv3.c */
        const char *name = strrchr(c.model, '/');
        struct hy_convert_src src = {&c.cfg, c.tok_json, c.tok_config, c.gen_config,
                                     c.chat_template};
        s = hy_convert_hyv3(tmp, name && name[1] ? name + 1 : c.model, c.st, &src, c.tok,
                            c.type, &c.n_plan, &err);
    } else if (!s) {
        s = make_plan(&c, &err);
        if (!s)
            s = write_gguf(&c, tmp, &err);
    }
    if (!s && rename(tmp, c.out) != 0)
        s = hy_err_set(&err, HY_E_IO, "%s: cannot rename to %s: %s", tmp, c.out, strerror(errno));
    if (s) {
        unlink(tmp);
        fprintf(stderr, "hymt convert: %s\n", err.msg);
    } else {
        struct stat sb;
        fprintf(stderr, "hymt convert: wrote %s (%s, %d tensors, %.1f MB)\n", c.out,
                type_names[c.type], c.n_plan,
                stat(c.out, &sb) == 0 ? (double)sb.st_size / 1e6 : 0.0);
    }
    conv_free(&c);
    return s ? 1 : 0;
}
