/* cmd_convert.c: `hymt convert`: a Hugging Face checkpoint folder to a GGUF file that
 * llama.cpp loads (and hymt: -m FILE.gguf). Tensor names and layout follow llama.cpp's
 * hunyuan-dense (model doc 3.4): ggml dims are the safetensors shape reversed, the bytes of a
 * row-major [out, in] matrix are already in ggml order, and no q/k permutation is applied.
 * Which type each tensor gets: convert_type.c (llama.cpp's rules, shared with
 * `hymt make-test-model --gguf`).
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
    "  --type TYPE         bf16 (default), f16, f32, q8_0, q4_0, q4_k_m or q6_k; norms (and\n"
    "                      a MoE router) stay F32; the 4-bit types put the head in Q6_K and\n"
    "                      q4_k_m also attn_v and ffn_down of some layers (hy_v3: the expert\n"
    "                      stacks too), as llama-quantize does\n"
    "  --force             overwrite FILE when it exists\n"
    "  -h, --help          this text\n";

static const struct cli_cmd cmd = {"convert", usage};


struct conv {
    const char *model, *out, *type_name;
    const char *name; /* the model's name (general.name): repo id or folder name */
    bool force;
    enum hy_convert_type type;
    struct hy_config cfg;
    struct hy_st *st;
    struct hy_convert_toks toks;
    struct hy_convert_item *plan;  /* one part each, in parts[] */
    struct hy_convert_part *parts;
    int n_plan;
};

static hy_status add_plan(struct conv *c, const char *gguf, const char *hf, struct hy_err *err)
{
    const struct hy_st_tensor *t = hy_st_find(c->st, hf);
    if (!t)
        return hy_err_set(err, HY_E_FORMAT, "%s: missing tensor %s", c->model, hf);
    if (t->n_dims < 1 || t->n_dims > 2 || (t->dtype != HY_DTYPE_F32 && t->dtype != HY_DTYPE_F16 &&
                                           t->dtype != HY_DTYPE_BF16))
        return hy_err_set(err, HY_E_UNSUPPORTED, "%s: tensor %s: %d dims of %s (convert reads "
                          "1-D or 2-D F32/F16/BF16)", c->model, hf, t->n_dims,
                          hy_dtype_name(t->dtype));
    struct hy_convert_item *p = &c->plan[c->n_plan];
    struct hy_convert_part *part = &c->parts[c->n_plan++];
    const int64_t cols = t->shape[t->n_dims - 1], rows = t->n_dims == 2 ? t->shape[0] : 1;
    *part = (struct hy_convert_part){t->dtype, t->n_dims, rows, cols, t->data, {0, 0, 0}};
    snprintf(p->name, sizeof p->name, "%s", gguf);
    p->type = hy_convert_tensor_type(c->type, gguf, t->n_dims, (uint64_t)cols,
                                     (int)c->cfg.num_hidden_layers, c->cfg.tie_word_embeddings);
    p->n_dims = t->n_dims;
    p->ne[0] = (uint64_t)cols;
    p->ne[1] = (uint64_t)rows;
    p->ne[2] = 1;
    p->parts = part;
    p->n_parts = 1;
    return HY_OK;
}

static hy_status make_plan(struct conv *c, struct hy_err *err)
{
    struct hy_layer_tensor layer[HY_LAYER_TENSORS]; /* names only */
    hy_layer_tensors(&c->cfg, NULL, layer);
    int nl = (int)c->cfg.num_hidden_layers;
    bool tied = c->cfg.tie_word_embeddings;
    c->plan = calloc((size_t)nl * HY_LAYER_TENSORS + 3, sizeof *c->plan);
    c->parts = calloc((size_t)nl * HY_LAYER_TENSORS + 3, sizeof *c->parts);
    if (!c->plan || !c->parts)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    hy_status s = add_plan(c, "token_embd.weight", "model.embed_tokens.weight", err);
    if (!s)
        s = add_plan(c, "output_norm.weight", "model.norm.weight", err);
    if (!s && !tied)
        s = add_plan(c, "output.weight", "lm_head.weight", err);
    const struct hy_st_tensor *lm = hy_st_find(c->st, "lm_head.weight");
    if (!s && tied && lm) {
        const struct hy_st_tensor *e = hy_st_find(c->st, "model.embed_tokens.weight");
        if (lm->nbytes != e->nbytes || memcmp(lm->data, e->data, e->nbytes))
            HY_LOGW("%s: the config ties the head, but the stored lm_head.weight differs from "
                    "embed_tokens; it is dropped, as llama.cpp does", c->model);
    }
    for (int i = 0; i < nl && !s; i++)
        for (int k = 0; k < HY_LAYER_TENSORS && !s; k++) {
            char g[HY_GGUF_MAX_NAME], h[HY_ST_MAX_NAME];
            snprintf(g, sizeof g, "blk.%d.%s.weight", i, layer[k].gguf);
            snprintf(h, sizeof h, "model.layers.%d.%s.weight", i, layer[k].hf);
            s = add_plan(c, g, h, err);
        }
    return s;
}

static hy_status open_sources(struct conv *c, struct hy_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", c->model);
    hy_status s = hy_config_load(&c->cfg, path, err);
    if (!s)
        s = hy_st_open(&c->st, c->model, err);
    if (!s)
        s = hy_convert_toks_open(&c->toks, c->model, err);
    if (!s && !c->toks.tok)
        HY_LOGW("%s: no tokenizer.json: the GGUF gets no tokenizer (hymt loads it for token ids; "
                "llama.cpp needs a vocabulary)", c->model);
    return s;
}

static hy_status write_gguf(struct conv *c, const char *path, struct hy_err *err)
{
    struct hy_convert_src src = {&c->cfg, c->toks.tok_json, c->toks.tok_config,
                                 c->toks.gen_config, c->toks.chat_template};
    return hy_convert_write_file(path, hy_convert_model_meta, c->name, &src, c->toks.tok, c->type,
                                 c->plan, c->n_plan, "hymt convert", err);
}

static void conv_free(struct conv *c)
{
    hy_st_close(c->st);
    hy_convert_toks_close(&c->toks);
    free(c->plan);
    free(c->parts);
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
    if (c->type_name && !hy_convert_type_parse(c->type_name, &c->type))
        return cli_fail(&cmd, "--type must be " HY_CONVERT_TYPE_NAMES ", not '%s'", c->type_name);
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
        struct hy_convert_src src = {&c.cfg, c.toks.tok_json, c.toks.tok_config,
                                     c.toks.gen_config, c.toks.chat_template};
        s = hy_convert_hyv3(tmp, name && name[1] ? name + 1 : c.model, c.st, &src, c.toks.tok,
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
                hy_convert_type_name(c.type), c.n_plan,
                stat(c.out, &sb) == 0 ? (double)sb.st_size / 1e6 : 0.0);
    }
    conv_free(&c);
    return s ? 1 : 0;
}
