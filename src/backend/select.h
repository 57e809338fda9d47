/* select.h: opening the backend a command runs on, by name.
 * "auto" picks CUDA when this build has it and a GPU is present, else the CPU; "cpu" and
 * "cuda" force one (HY_E_UNSUPPORTED when CUDA is not built in or no GPU answers, naming
 * which). cpu_threads <= 0 means all online CPUs. Destroy with be->i->destroy(be).
 * Options only one backend has (struct hy_backend_open_opts) are HY_E_UNSUPPORTED on the
 * others, naming the option's flag: nothing is then created. */
#ifndef HY_BACKEND_SELECT_H
#define HY_BACKEND_SELECT_H

#include "backend/backend.h"

#include <stddef.h>

/* The KV pool's element type (--kv-type): auto is bf16 on CUDA and float32 on the CPU. */
enum hy_kv_type { HY_KV_AUTO = 0, HY_KV_F32, HY_KV_BF16 };

/* Backend options a command can set; zero-fill for the defaults. */
struct hy_backend_open_opts {
    /* CUDA only (--fp8-gemm): fp8 weights multiply inputs of more than 8 rows on the fp8
     * tensor cores, activations rounded to e4m3 (hy_cuda_opts.fp8_act = 1; sm_89+, else
     * the default bf16 path). */
    bool fp8_gemm;
    /* --kv-type: bf16 is CUDA only (the CPU backends keep float32 K/V) */
    enum hy_kv_type kv_type;
};

/* "auto", "f32", "bf16" as enum hy_kv_type; -1 for anything else (NULL included). */
int hy_kv_type_parse(const char *name);

hy_status hy_backend_open_opts(struct hy_backend **out, const char *device, int cpu_threads,
                               const struct hy_backend_open_opts *o, struct hy_err *err);
/* hy_backend_open_opts with the defaults (o NULL). */
hy_status hy_backend_open(struct hy_backend **out, const char *device, int cpu_threads,
                          struct hy_err *err);
/* Whether the name is one hy_backend_open takes ("auto", "cpu", "cuda"). */
bool hy_backend_name_valid(const char *device);
/* "cpu, 2 threads" or "cuda: NVIDIA H200" into buf; returns buf. */
const char *hy_backend_describe(const struct hy_backend *be, char *buf, size_t cap);

#endif
