/* safetensors.h: reader and writer of Hugging Face safetensors checkpoints.
 * Reader: hy_st_open(dir) opens model.safetensors, or every shard listed in
 * model.safetensors.index.json; files are mmapped and tensors point into the maps. Every
 * malformed input is an error naming the file and the problem (truncated file, header length
 * beyond the file, invalid JSON header, unknown dtype, data out of bounds or overlapping,
 * shape/size mismatch, duplicate names, index naming a missing shard or tensor); nothing is
 * trusted. Dtypes read: F32, F16, BF16 (others are HY_E_UNSUPPORTED naming the dtype).
 * Writer: hy_st_write() streams tensors to one file or to shards plus the index, asking a
 * callback to fill each tensor's bytes, so multi-GB checkpoints never sit in memory at once.
 * An open set is read-only and thread-safe; hy_st_close frees everything. */
#ifndef HY_FORMATS_SAFETENSORS_H
#define HY_FORMATS_SAFETENSORS_H

#include "core/dtype.h"
#include "core/status.h"

#include <stddef.h>
#include <stdint.h>

#define HY_ST_MAX_DIMS 4
#define HY_ST_MAX_NAME 256              /* bytes incl. NUL; longer names are an error */
#define HY_ST_MAX_HEADER (100u << 20)   /* header JSON bytes; larger is an error */
#define HY_ST_MAX_SHARDS 1024

struct hy_st_tensor {
    char name[HY_ST_MAX_NAME];
    enum hy_dtype dtype;
    int n_dims;                    /* 0..HY_ST_MAX_DIMS */
    int64_t shape[HY_ST_MAX_DIMS]; /* shape[0] outermost */
    int64_t n_elems;
    const void *data;              /* into the file map */
    size_t nbytes;
    int file;                      /* index of the shard file it came from */
};

struct hy_st;

/* dir: a checkpoint directory. Uses model.safetensors.index.json when present, else
 * model.safetensors. HY_E_IO when neither exists or a file cannot be read. */
hy_status hy_st_open(struct hy_st **out, const char *dir, struct hy_err *err);
/* Opens exactly one .safetensors file. */
hy_status hy_st_open_file(struct hy_st **out, const char *path, struct hy_err *err);
void hy_st_close(struct hy_st *st); /* accepts NULL */

size_t hy_st_count(const struct hy_st *st);
const struct hy_st_tensor *hy_st_at(const struct hy_st *st, size_t i);
/* NULL when absent. */
const struct hy_st_tensor *hy_st_find(const struct hy_st *st, const char *name);
/* Path of shard file i (for messages). */
const char *hy_st_file_path(const struct hy_st *st, int file);
int hy_st_file_count(const struct hy_st *st);

/* ---- writer ---- */

struct hy_st_wtensor {
    const char *name;
    enum hy_dtype dtype;
    int n_dims;
    int64_t shape[HY_ST_MAX_DIMS];
};

/* Fills buf (nbytes = tensor i's size) with tensor i's data in its dtype. */
typedef hy_status (*hy_st_fill_fn)(void *ctx, size_t i, void *buf, size_t nbytes,
                                   struct hy_err *err);

/* Writes n tensors in order into dir. If the total data is <= max_shard_bytes (or
 * max_shard_bytes == 0) it writes dir/model.safetensors; otherwise it writes
 * dir/model-0000K-of-0000N.safetensors, splitting between tensors once a shard exceeds
 * max_shard_bytes, plus dir/model.safetensors.index.json. `metadata` (may be NULL) is
 * stored as {"format": metadata} in __metadata__. dir must exist. */
hy_status hy_st_write(const char *dir, const struct hy_st_wtensor *t, size_t n,
                      uint64_t max_shard_bytes, hy_st_fill_fn fill, void *ctx,
                      struct hy_err *err);

#endif
