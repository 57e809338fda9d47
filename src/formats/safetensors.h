/* safetensors.h: reader and writer of Hugging Face safetensors checkpoints.
 * Reader: hy_st_open(dir) opens model.safetensors, or every shard listed in
 * model.safetensors.index.json; files are mmapped and tensors point into the maps. Every
 * malformed input is an error naming the file and the problem (truncated file, header length
 * beyond the file, invalid JSON header, unknown dtype, data out of bounds or overlapping,
 * shape/size mismatch, duplicate names, index naming a missing shard or tensor); nothing is
 * trusted. Dtypes read: F32, F16, BF16, F8_E4M3 (float8 e4m3fn, the fp8 checkpoints' weights),
 * and the integer I32, I8, U8 (GPTQ's qweight/qzeros/g_idx), which are kept apart: they
 * have no enum hy_dtype (no kernel reads them), so hy_st_count/hy_st_at/hy_st_find never
 * return them and hy_st_int_* / hy_st_find_int do. Every other dtype is HY_E_UNSUPPORTED
 * naming it.
 * Status kinds: HY_E_IO (file missing or unreadable), HY_E_FORMAT (malformed), HY_E_RANGE (over
 * one of the limits below), HY_E_UNSUPPORTED (valid but not read: dtype, more than 4 dims).
 * The index and its shards must agree exactly: a tensor in a shard but absent from the index
 * is an error too, as is a tensor in two shards. Gaps between tensors' data are allowed.
 * Alignment: tensor data is NOT guaranteed to be aligned to its element size (the format pads
 * only the header, to 8 bytes, and mixed dtypes shift later offsets), so consumers must read
 * elements through memcpy (or copy whole tensors) rather than cast t->data to float *.
 * Writer: hy_st_write() streams tensors to one file or to shards plus the index, asking a
 * callback to fill each tensor's bytes, so multi-GB checkpoints never sit in memory at once.
 * An open set is read-only and thread-safe; hy_st_close frees everything. */
#ifndef HY_FORMATS_SAFETENSORS_H
#define HY_FORMATS_SAFETENSORS_H

#include "core/dtype.h"
#include "core/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HY_ST_MAX_DIMS 4
#define HY_ST_MAX_NAME 256              /* bytes incl. NUL; longer names are an error */
#define HY_ST_MAX_HEADER (100u << 20)   /* header JSON bytes; larger is an error */
#define HY_ST_MAX_SHARDS 1024
#define HY_ST_MAX_INDEX (64u << 20)     /* bytes of model.safetensors.index.json */

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
/* hy_fmap_release of every file: the mapped bytes stay readable (paged in again on use). */
void hy_st_release_pages(const struct hy_st *st);

/* Tensors in order: file by file (shards in file-name order), and by data
 * offset within a file. */
size_t hy_st_count(const struct hy_st *st);
const struct hy_st_tensor *hy_st_at(const struct hy_st *st, size_t i); /* i < count */
/* NULL when absent. A tensor put with hy_st_put is returned in place of the stored one. */
const struct hy_st_tensor *hy_st_find(const struct hy_st *st, const char *name);
/* Path of shard file i, 0 <= i < hy_st_file_count (for messages). */
const char *hy_st_file_path(const struct hy_st *st, int file);
int hy_st_file_count(const struct hy_st *st);

/* ---- in-memory tensors, for loaders that turn stored tensors into others (fp8 and GPTQ
 * checkpoints dequantized at load, model/load_quant.c). Not thread-safe: put before the set
 * is shared. ---- */

/* Adds an in-memory tensor that hy_st_find returns in place of a stored one of the same
 * name (or a later put of the name replaces an earlier one). hy_st_count / hy_st_at /
 * hy_st_find_stored keep describing the files. `file` attributes it to a shard in
 * messages. owned: data was malloc'ed and hy_st_close frees it (also when the put fails);
 * else the caller keeps it alive while the set is used. HY_E_INVAL for a long name, bad
 * file or shape. Pointers from earlier hy_st_find calls on put tensors become invalid. */
hy_status hy_st_put(struct hy_st *st, const char *name, int file, enum hy_dtype dtype, int n_dims,
                    const int64_t *shape, void *data, bool owned, struct hy_err *err);
/* The tensor as the files hold it, ignoring puts. NULL when absent. */
const struct hy_st_tensor *hy_st_find_stored(const struct hy_st *st, const char *name);

/* ---- integer tensors (I32, I8, U8), little-endian as the format stores them; checked like
 * the others (bounds, size against the shape, overlap with any tensor, duplicate names across
 * both kinds, index agreement). ---- */

enum hy_st_int_type { HY_ST_I32 = 0, HY_ST_I8 = 1, HY_ST_U8 = 2 };

struct hy_st_itensor {
    char name[HY_ST_MAX_NAME];
    enum hy_st_int_type type;
    int n_dims;
    int64_t shape[HY_ST_MAX_DIMS];
    int64_t n_elems;
    const void *data;              /* into the file map: possibly unaligned (read with memcpy) */
    size_t nbytes;
    int file;
};

size_t hy_st_int_count(const struct hy_st *st);
const struct hy_st_itensor *hy_st_int_at(const struct hy_st *st, size_t i); /* by name */
const struct hy_st_itensor *hy_st_find_int(const struct hy_st *st, const char *name);
const char *hy_st_int_type_name(enum hy_st_int_type t); /* "I32", "I8", "U8" */

/* Element i of an I32 tensor (little-endian host assumed, as everywhere in hymt). */
static inline int32_t hy_st_i32(const struct hy_st_itensor *t, int64_t i)
{
    int32_t v;
    memcpy(&v, (const unsigned char *)t->data + 4 * (size_t)i, 4);
    return v;
}

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

/* Writes n tensors in order into dir (which must exist), with contiguous data_offsets and the
 * header padded with spaces to a multiple of 8 bytes; __metadata__ is {"format": "pt"}, which
 * transformers expects. If the total data is <= max_shard_bytes (or max_shard_bytes == 0) it
 * writes dir/model.safetensors and removes a stale dir/model.safetensors.index.json (readers
 * prefer the index); otherwise it writes dir/model-0000K-of-0000N.safetensors plus
 * dir/model.safetensors.index.json ({"metadata": {"total_size"}, "weight_map"}). A shard is
 * closed before the tensor that would take it past max_shard_bytes, so only a shard holding a
 * single larger tensor exceeds it. One buffer of the largest tensor's size is allocated.
 * HY_E_INVAL for bad tensor descriptions (duplicate or long names, bad dims); HY_E_RANGE for
 * more than HY_ST_MAX_SHARDS shards; HY_E_IO naming the file when a write fails (disk full);
 * the callback's status, prefixed with the tensor name, when it fails. A failed write removes
 * the file it was writing; shards written before it stay. */
hy_status hy_st_write(const char *dir, const struct hy_st_wtensor *t, size_t n,
                      uint64_t max_shard_bytes, hy_st_fill_fn fill, void *ctx,
                      struct hy_err *err);

#endif
