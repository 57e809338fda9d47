/* select.c: backend choice by name (select.h has the contract). */
#include "backend/select.h"

#include "backend/cpu/cpu.h"
#ifdef HYMT_CUDA
#include "backend/cuda/cuda.h"
#endif

#include <stdio.h>
#include <string.h>

int hy_kv_type_parse(const char *name)
{
    static const char *const names[] = {"auto", "f32", "bf16"}; /* enum hy_kv_type order */
    for (int i = 0; name && i < 3; i++)
        if (!strcmp(name, names[i]))
            return i;
    return -1;
}

bool hy_backend_name_valid(const char *device)
{
    return device && (!strcmp(device, "auto") || !strcmp(device, "cpu") || !strcmp(device, "cuda"));
}

/* The CPU backend was chosen: refuse the options only CUDA has. `why` says why it is the
 * CPU when the user did not name it. */
static hy_status cpu_only_opts(const struct hy_backend_open_opts *o, const char *why,
                               struct hy_err *err)
{
    if (o && o->fp8_gemm)
        return hy_err_set(err, HY_E_UNSUPPORTED, "--fp8-gemm needs the CUDA backend (--device "
                          "cuda); the cpu backend does not offer it%s", why);
    if (o && o->kv_type == HY_KV_BF16)
        return hy_err_set(err, HY_E_UNSUPPORTED, "--kv-type bf16 needs the CUDA backend "
                          "(--device cuda); the cpu backend keeps K/V in f32%s", why);
    return HY_OK;
}

hy_status hy_backend_open_opts(struct hy_backend **out, const char *device, int cpu_threads,
                               const struct hy_backend_open_opts *o, struct hy_err *err)
{
    *out = NULL;
    if (!hy_backend_name_valid(device))
        return hy_err_set(err, HY_E_INVAL, "device must be auto, cpu or cuda, not '%s'",
                          device ? device : "(null)");
    bool want_cuda = !strcmp(device, "cuda");
    bool is_auto = !strcmp(device, "auto");
#ifdef HYMT_CUDA
    if (want_cuda || (is_auto && hy_cuda_available())) {
        if (!hy_cuda_available())
            return hy_err_set(err, HY_E_UNSUPPORTED, "device cuda: no CUDA GPU is available");
        struct hy_cuda_opts co = {0};
        co.fp8_act = o && o->fp8_gemm ? 1 : 0;
        co.kv_f32 = o && o->kv_type == HY_KV_F32 ? 1 : 0;
        return hy_cuda_backend_create_opts(out, 0, &co, err);
    }
    const char *why = is_auto ? " (device auto: no CUDA GPU is available)" : "";
#else
    if (want_cuda)
        return hy_err_set(err, HY_E_UNSUPPORTED,
                          "device cuda: this hymt was built without CUDA (-DHYMT_CUDA=OFF)");
    const char *why = is_auto ? " (this hymt was built without CUDA)" : "";
#endif
    hy_status st = cpu_only_opts(o, why, err);
    if (st)
        return st;
    return hy_cpu_backend_create(out, cpu_threads, err);
}

hy_status hy_backend_open(struct hy_backend **out, const char *device, int cpu_threads,
                          struct hy_err *err)
{
    return hy_backend_open_opts(out, device, cpu_threads, NULL, err);
}

const char *hy_backend_describe(const struct hy_backend *be, char *buf, size_t cap)
{
#ifdef HYMT_CUDA
    if (!strcmp(be->i->name, "cuda")) {
        snprintf(buf, cap, "cuda: %s", hy_cuda_backend_device_name(be));
        return buf;
    }
#endif
    snprintf(buf, cap, "%s, %d threads", be->i->name, hy_cpu_backend_threads(be));
    return buf;
}
