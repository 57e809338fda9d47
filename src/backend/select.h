/* select.h: opening the backend a command runs on, by name.
 * "auto" picks CUDA when this build has it and a GPU is present, else the CPU; "cpu" and
 * "cuda" force one (HY_E_UNSUPPORTED when CUDA is not built in or no GPU answers, naming
 * which). cpu_threads <= 0 means all online CPUs. Destroy with be->i->destroy(be). */
#ifndef HY_BACKEND_SELECT_H
#define HY_BACKEND_SELECT_H

#include "backend/backend.h"

#include <stddef.h>

hy_status hy_backend_open(struct hy_backend **out, const char *device, int cpu_threads,
                          struct hy_err *err);
/* Whether the name is one hy_backend_open takes ("auto", "cpu", "cuda"). */
bool hy_backend_name_valid(const char *device);
/* "cpu, 2 threads" or "cuda: NVIDIA H200" into buf; returns buf. */
const char *hy_backend_describe(const struct hy_backend *be, char *buf, size_t cap);

#endif
