/* hymt.h: the public interface of libhymt, for programs that embed the engine.
 *
 * A typical embedding (error handling shortened; every call returns hy_status and fills
 * a struct hy_err with a one-line message):
 *
 *     struct hy_backend *be;  hy_cpu_backend_create(&be, 0, &err);       // all CPUs
 *     struct hy_model *m;     hy_model_load(&m, "/models/Hunyuan-MT-7B", be, &err);
 *     struct hy_tok *tok;     hy_tok_load(&tok, "/models/Hunyuan-MT-7B", &err);
 *     struct hy_engine_params p = hy_engine_params_default();            // KV memory etc.
 *     struct hy_engine *e;    hy_engine_create(&e, m, &p, &err);         // starts the thread
 *
 *     // a whole document, all segments batched, written in order through a callback:
 *     struct hy_doc_opts o = {.tgt = hy_lang_find("en"), .write = my_write,
 *                             .sampling = hy_sampler_params_default()};
 *     hy_doc_translate(e, tok, text, len, &o, &result, &err);
 *
 *     // or single requests from any number of threads:
 *     hy_engine_submit(e, &req, &handle, &err);      // HY_E_NOSPACE: queue full
 *     n = hy_engine_read(e, handle, ids, cap, timeout_s, &status);   // new token ids
 *     hy_detok_push(&detok, ids[i], text, cap);      // streaming text, whole characters
 *     hy_engine_release(e, handle);
 *
 *     hy_engine_destroy(e); hy_tok_destroy(tok); hy_model_destroy(m); be->i->destroy(be);
 *
 * Threads: hy_engine_* (except create/destroy), hy_tok_* and hy_lang_* may be called from
 * any thread; one engine thread owns the model, the KV cache and the scheduler. Memory is
 * fixed when the engine is created. Each module's header states its own contract. */
#ifndef HYMT_H
#define HYMT_H

#include "backend/cpu/cpu.h"
#include "core/status.h"
#include "engine/engine.h"
#include "engine/sampler.h"
#include "model/hunyuan.h"
#include "tokenizer/tokenizer.h"
#include "translate/doc.h"
#include "translate/lang.h"
#include "translate/prompt.h"

#define HYMT_VERSION "0.1.0"

#endif
