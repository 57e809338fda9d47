/* load.c: resolving -m MODEL and loading the model on its backend (load.h has the contract). */
#include "cli/load.h"

#include "backend/select.h"
#include "core/log.h"
#include "cli/engine_opts.h"
#include "core/log.h"
#include "engine/engine.h"
#include "model/hunyuan.h"
#include "tokenizer/tokenizer.h"
#include "translate/prompt_detect.h"

#include <stdio.h>
#include <string.h>

int cli_model_resolve(const struct cli_cmd *cmd, const char *arg, struct cli_model *out)
{
    static struct hy_hub_err err; /* large; one resolution per command */
    if (hy_hub_resolve_model(arg, out->path, sizeof out->path, out->name, sizeof out->name,
                             &err)) {
        fprintf(stderr, "hymt %s: %s\n", cmd->name, err.msg);
        return 1;
    }
    return 0;
}

/* cli_load_model, the model loaded with share_from (hunyuan.h) when not NULL. */
static hy_status load_model(const char *dir, const char *device, const char *default_device,
                            int threads, const char *quant, bool fp8_gemm, const char *kv_type,
                            const struct hy_model *share_from, struct hy_backend **be,
                            struct hy_model **m, struct hy_err *err)
{
    *m = NULL;
    *be = NULL;
    int qd = cli_quant_dtype(quant);
    if (qd < 0)
        return hy_err_set(err, HY_E_INVAL, "unknown --quant '%s'", quant);
    int kt = kv_type ? hy_kv_type_parse(kv_type) : HY_KV_AUTO;
    if (kt < 0)
        return hy_err_set(err, HY_E_INVAL, "--kv-type must be auto, f32 or bf16, not '%s'",
                          kv_type);
    const struct hy_backend_open_opts bo = {.fp8_gemm = fp8_gemm,
                                            .kv_type = (enum hy_kv_type)kt};
    hy_status st = hy_backend_open_opts(be, device ? device : default_device, threads, &bo, err);
    if (st)
        return st;
    if (qd == HY_DTYPE_F8_E4M3 && (*be)->i->weight_upload && !(*be)->i->weight_upload_fp8) {
        st = hy_err_set(err, HY_E_UNSUPPORTED, "--quant fp8 is not supported on the %s backend "
                        "yet (CPU only)", (*be)->i->name);
        (*be)->i->destroy(*be);
        *be = NULL;
        return st;
    }
    struct hy_model_opts mo = {.quant = (enum hy_dtype)qd, .share_from = share_from};
    st = hy_model_load_opts(m, dir, *be, &mo, err);
    if (st) {
        (*be)->i->destroy(*be);
        *be = NULL;
    }
    return st;
}

hy_status cli_load_model(const char *dir, const char *device, const char *default_device,
                         int threads, const char *quant, bool fp8_gemm, const char *kv_type,
                         struct hy_backend **be,
                         struct hy_model **m, struct hy_err *err)
{
    return load_model(dir, device, default_device, threads, quant, fp8_gemm, kv_type, NULL, be,
                      m, err);
}

/* One KV budget for the two engines: the translation engine's parameters *p as
 * cli_kv_setup made them (bytes, or a share of the device memory free now that both models
 * are loaded) become two byte sizes, Chimera's in *pc. */
static void split_kv(const struct cli_stack *s, struct hy_engine_params *p,
                     struct hy_engine_params *pc)
{
    int64_t budget = p->kv_bytes;
    if (p->kv_fraction > 0) {
        uint64_t used = 0, total = 0;
        s->be->i->mem_info(s->be, &used, &total);
        budget = (int64_t)(p->kv_fraction * (double)(total - used));
        p->kv_fraction = 0;
    }
    *pc = *p;
    pc->kv_bytes = (int64_t)((double)budget * HY_CLI_CHIMERA_KV_SHARE);
    p->kv_bytes = budget - pc->kv_bytes;
    HY_LOGI("chimera: one KV budget of %lld bytes: translation engine %lld, Chimera %lld",
            (long long)budget, (long long)p->kv_bytes, (long long)pc->kv_bytes);
}

hy_status cli_stack_load(struct cli_stack *s, const char *model, const char *chimera,
                         const char *device,
                         int threads, const char *quant, bool fp8_gemm, const char *kv_type,
                         const struct cli_engine_flags *f, const struct hy_engine_params *ep,
                         struct hy_err *err)
{
    memset(s, 0, sizeof *s);
    hy_status st = cli_load_model(model, device, "auto", threads, quant, fp8_gemm, kv_type,
                                  &s->be, &s->m, err);
    if (!st)
        st = hy_tok_load(&s->tok, model, err);
    if (!st && chimera) /* the same device and options, its own backend object: one engine
                         * thread a backend (backend.h) */
        st = load_model(chimera, device, "auto", threads, quant, fp8_gemm, kv_type, s->m,
                        &s->cbe, &s->cm, err);
    if (!st && chimera)
        st = hy_tok_load(&s->ctok, chimera, err);
    struct hy_engine_params p = *ep, pc;
    if (!st)
        st = cli_kv_setup(f, s->be, &p, err);
    if (!st && chimera) {
        struct hy_engine_params unused = *ep;
        st = cli_kv_setup(f, s->cbe, &unused, err); /* --batch-invariant on its backend too */
        split_kv(s, &p, &pc);
    }
    if (!st)
        st = hy_engine_create(&s->e, s->m, &p, err);
    if (!st && chimera)
        st = hy_engine_create(&s->ce, s->cm, &pc, err);
    return st;
}

void cli_stack_free(struct cli_stack *s)
{
    hy_engine_destroy(s->ce);
    hy_engine_destroy(s->e);
    hy_tok_destroy(s->ctok);
    hy_tok_destroy(s->tok);
    hy_model_destroy(s->cm); /* borrows weights from m */
    hy_model_destroy(s->m);
    if (s->cbe)
        s->cbe->i->destroy(s->cbe);
    if (s->be)
        s->be->i->destroy(s->be);
    memset(s, 0, sizeof *s);
}

hy_status cli_prompt_profile(const struct cli_model *mp, const char *forced,
                             const struct hy_tok *tok, struct hy_prompt_profile *out,
                             struct hy_err *err)
{
    const struct hy_prompt_source src = {mp->path, mp->name, forced};
    hy_status st = hy_prompt_profile_detect(tok, &src, out, err);
    if (!st) {
        char line[HY_PROMPT_WHY_MAX + 256];
        hy_prompt_profile_describe(out, line, sizeof line);
        HY_LOGI("prompts: %s", line);
    }
    return st;
}

int cli_check_prompt_style(const struct cli_cmd *cmd, const char *s)
{
    enum hy_prompt_gen g;
    if (s && strcmp(s, "auto") != 0 && !hy_prompt_gen_parse(s, &g))
        return cli_fail(cmd, "--prompt-style '%s': expected auto, mt1 (Hunyuan-MT-7B, Chimera), "
                        "mt1.5 (HY-MT1.5) or mt2 (Hy-MT2)", s);
    return CLI_OK;
}
