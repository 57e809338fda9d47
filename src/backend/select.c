/* select.c: backend choice by name (select.h has the contract). */
#include "backend/select.h"

#include "backend/cpu/cpu.h"
#ifdef HYMT_CUDA
#include "backend/cuda/cuda.h"
#endif

#include <stdio.h>
#include <string.h>

bool hy_backend_name_valid(const char *device)
{
    return device && (!strcmp(device, "auto") || !strcmp(device, "cpu") || !strcmp(device, "cuda"));
}

hy_status hy_backend_open(struct hy_backend **out, const char *device, int cpu_threads,
                          struct hy_err *err)
{
    *out = NULL;
    if (!hy_backend_name_valid(device))
        return hy_err_set(err, HY_E_INVAL, "device must be auto, cpu or cuda, not '%s'",
                          device ? device : "(null)");
    bool want_cuda = !strcmp(device, "cuda");
#ifdef HYMT_CUDA
    if (want_cuda || (!strcmp(device, "auto") && hy_cuda_available())) {
        if (!hy_cuda_available())
            return hy_err_set(err, HY_E_UNSUPPORTED, "device cuda: no CUDA GPU is available");
        return hy_cuda_backend_create(out, 0, err);
    }
#else
    if (want_cuda)
        return hy_err_set(err, HY_E_UNSUPPORTED,
                          "device cuda: this hymt was built without CUDA (-DHYMT_CUDA=OFF)");
#endif
    return hy_cpu_backend_create(out, cpu_threads, err);
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
