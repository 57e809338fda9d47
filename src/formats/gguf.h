/* gguf.h: reader and streaming writer of GGUF v3 files (ggml's docs/gguf.md), little-endian.
 * Reader: hy_gguf_open mmaps the file (hy_gguf_open_mem parses caller-owned bytes) and
 * validates everything before returning: magic, version 3, counts and string lengths under
 * the limits below, every value type, no nested arrays, no duplicate keys or tensor names,
 * tensor dims (1..4, each >= 1, no overflow, ne[0] a multiple of the type's block), known
 * ggml type ids, general.alignment (u32, power of two; default 32), every tensor offset
 * aligned and its data inside the file, tensors not overlapping, and a truncated file.
 * Errors name the source (the path) and what is wrong: HY_E_IO (cannot read), HY_E_FORMAT
 * (malformed), HY_E_RANGE (over a limit), HY_E_UNSUPPORTED (an unknown ggml type id or
 * another GGUF version). Keys, values and tensor data point into the map; an open file is
 * immutable and thread-safe to read; hy_gguf_close frees everything.
 * Writer: KV pairs and tensor infos are collected in memory, then hy_gguf_w_begin_data
 * writes the header and each tensor's bytes are streamed in order, padded to the
 * alignment, so multi-GB models never sit in memory. Errors: HY_E_INVAL for bad arguments
 * (duplicate key or name, bad dims, tensors out of order), HY_E_IO naming the path.
 * Dims are in ggml order everywhere: ne[0] is the innermost (in-features of a matrix whose
 * safetensors shape is [out, in]); ne[1] = out. */
#ifndef HY_FORMATS_GGUF_H
#define HY_FORMATS_GGUF_H

#include "core/dtype.h"
#include "core/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HY_GGUF_VERSION 3
#define HY_GGUF_DEFAULT_ALIGNMENT 32
#define HY_GGUF_MAX_DIMS 4
#define HY_GGUF_MAX_NAME 256            /* tensor name bytes incl. NUL */
#define HY_GGUF_MAX_KEY 256             /* key bytes incl. NUL */
#define HY_GGUF_MAX_KV (1u << 16)       /* metadata pairs */
#define HY_GGUF_MAX_TENSORS (1u << 20)
#define HY_GGUF_MAX_STRING (64u << 20)  /* one string value (chat templates are large) */
#define HY_GGUF_MAX_ARRAY (1u << 26)    /* elements of one array (vocabularies ~ 2^17) */

/* Metadata value types (gguf_metadata_value_type). */
enum hy_gguf_type {
    HY_GGUF_U8 = 0,
    HY_GGUF_I8 = 1,
    HY_GGUF_U16 = 2,
    HY_GGUF_I16 = 3,
    HY_GGUF_U32 = 4,
    HY_GGUF_I32 = 5,
    HY_GGUF_F32 = 6,
    HY_GGUF_BOOL = 7,
    HY_GGUF_STRING = 8,
    HY_GGUF_ARRAY = 9,
    HY_GGUF_U64 = 10,
    HY_GGUF_I64 = 11,
    HY_GGUF_F64 = 12,
};

/* ggml tensor type ids (ggml.h enum ggml_type) that hymt reads or writes. */
enum hy_ggml_type {
    HY_GGML_F32 = 0,
    HY_GGML_F16 = 1,
    HY_GGML_Q4_0 = 2,
    HY_GGML_Q8_0 = 8,
    HY_GGML_Q4_K = 12,
    HY_GGML_Q6_K = 14,
    HY_GGML_BF16 = 30,
};

struct hy_gguf_kv {
    const char *key;              /* NUL-terminated copy */
    enum hy_gguf_type type;
    enum hy_gguf_type arr_type;   /* for HY_GGUF_ARRAY */
    uint64_t arr_n;               /* for HY_GGUF_ARRAY: element count */
    const unsigned char *val;     /* the value's bytes in the map (for a string: its u64
                                     length, then the bytes; for an array: the elements) */
};

struct hy_gguf_tensor {
    char name[HY_GGUF_MAX_NAME];
    uint32_t ggml_type;           /* enum hy_ggml_type or another known ggml id */
    int n_dims;                   /* 1..HY_GGUF_MAX_DIMS */
    uint64_t ne[HY_GGUF_MAX_DIMS];/* ggml order; unused dims are 1 */
    uint64_t n_elems;
    uint64_t offset;              /* from the start of the data section */
    size_t nbytes;
    const void *data;             /* into the map; aligned to the file's alignment */
};

struct hy_gguf;

hy_status hy_gguf_open(struct hy_gguf **out, const char *path, struct hy_err *err);
/* Parses size bytes at data (caller-owned, must outlive the result); `what` names the
 * source in errors. */
hy_status hy_gguf_open_mem(struct hy_gguf **out, const void *data, size_t size, const char *what,
                           struct hy_err *err);
void hy_gguf_close(struct hy_gguf *g); /* accepts NULL */
/* hy_fmap_release of the file (nothing for hy_gguf_open_mem): keys, values and tensor
 * data stay readable, paged in again on use. */
void hy_gguf_release_pages(const struct hy_gguf *g);

/* True when the file at path starts with the GGUF magic (a cheap check for dispatch). */
bool hy_gguf_is_gguf(const char *path);

const char *hy_gguf_path(const struct hy_gguf *g);
uint32_t hy_gguf_alignment(const struct hy_gguf *g);
size_t hy_gguf_kv_count(const struct hy_gguf *g);
const struct hy_gguf_kv *hy_gguf_kv_at(const struct hy_gguf *g, size_t i);
const struct hy_gguf_kv *hy_gguf_find_kv(const struct hy_gguf *g, const char *key); /* NULL */
size_t hy_gguf_tensor_count(const struct hy_gguf *g);
const struct hy_gguf_tensor *hy_gguf_tensor_at(const struct hy_gguf *g, size_t i); /* file order */
const struct hy_gguf_tensor *hy_gguf_find_tensor(const struct hy_gguf *g, const char *name);

/* Typed getters. Absent key: HY_E_NOTFOUND when required (message names the key), else HY_OK
 * with *out unchanged. Wrong type: HY_E_FORMAT naming the key and both types.
 * get_uint accepts any integer type with a non-negative value, get_real F32 or F64, get_str a
 * string (not NUL-terminated: *len bytes, in the map). */
hy_status hy_gguf_get_uint(const struct hy_gguf *g, const char *key, bool required, uint64_t *out,
                           struct hy_err *err);
hy_status hy_gguf_get_real(const struct hy_gguf *g, const char *key, bool required, double *out,
                           struct hy_err *err);
hy_status hy_gguf_get_bool(const struct hy_gguf *g, const char *key, bool required, bool *out,
                           struct hy_err *err);
hy_status hy_gguf_get_str(const struct hy_gguf *g, const char *key, bool required, const char **s,
                          size_t *len, struct hy_err *err);
/* An array of arr_type (any type when arr_type < 0): its kv (NULL when absent and not
 * required). */
hy_status hy_gguf_get_arr(const struct hy_gguf *g, const char *key, bool required, int arr_type,
                          const struct hy_gguf_kv **kv, struct hy_err *err);
/* Element i of an integer array as int64 (any integer element type; i < arr_n). */
int64_t hy_gguf_arr_int(const struct hy_gguf_kv *kv, uint64_t i);
/* Walks a string array: *pos starts at 0; each call returns the next string. */
void hy_gguf_arr_str_next(const struct hy_gguf_kv *kv, size_t *pos, const char **s, size_t *len);

/* "F32", "Q8_0", ... for a ggml type id ("?" when unknown). */
const char *hy_ggml_type_name(uint32_t t);
/* Elements per block and bytes per block of a ggml type; false when the id is unknown. */
bool hy_ggml_type_info(uint32_t t, uint64_t *block_elems, uint64_t *block_bytes);
/* hymt dtype of a ggml type, or -1 when hymt has none. */
int hy_ggml_to_dtype(uint32_t t);
/* ggml type of a hymt dtype. */
uint32_t hy_dtype_to_ggml(enum hy_dtype d);
/* Bytes of a tensor of type t with n elements (n a multiple of the block). */
uint64_t hy_ggml_nbytes(uint32_t t, uint64_t n);

/* ---- writer ---- */

struct hy_gguf_w;

/* Opens path for writing (created or truncated). */
hy_status hy_gguf_w_open(struct hy_gguf_w **out, const char *path, struct hy_err *err);
/* Metadata, in the order written. general.alignment is written by begin_data when unset. */
hy_status hy_gguf_w_str(struct hy_gguf_w *w, const char *key, const char *s, struct hy_err *err);
hy_status hy_gguf_w_u32(struct hy_gguf_w *w, const char *key, uint32_t v, struct hy_err *err);
hy_status hy_gguf_w_i32(struct hy_gguf_w *w, const char *key, int32_t v, struct hy_err *err);
hy_status hy_gguf_w_f32(struct hy_gguf_w *w, const char *key, float v, struct hy_err *err);
hy_status hy_gguf_w_f64(struct hy_gguf_w *w, const char *key, double v, struct hy_err *err);
hy_status hy_gguf_w_bool(struct hy_gguf_w *w, const char *key, bool v, struct hy_err *err);
/* Arrays: n strings (lens[i] bytes each; lens NULL: NUL-terminated), n int32 values. */
hy_status hy_gguf_w_arr_str(struct hy_gguf_w *w, const char *key, const char *const *s,
                            const size_t *lens, uint64_t n, struct hy_err *err);
hy_status hy_gguf_w_arr_i32(struct hy_gguf_w *w, const char *key, const int32_t *v, uint64_t n,
                            struct hy_err *err);
/* Declares the next tensor (data follows in the same order). */
hy_status hy_gguf_w_tensor(struct hy_gguf_w *w, const char *name, uint32_t ggml_type, int n_dims,
                           const uint64_t *ne, struct hy_err *err);
/* Writes the header (magic, counts, KVs, tensor infos) and pads to the alignment. */
hy_status hy_gguf_w_begin_data(struct hy_gguf_w *w, struct hy_err *err);
/* Appends bytes of the current tensor; a tensor may come in several calls. When its size
 * is reached the padding follows and the next tensor starts. More bytes than declared is
 * HY_E_INVAL. */
hy_status hy_gguf_w_data(struct hy_gguf_w *w, const void *data, size_t n, struct hy_err *err);
/* Checks every tensor was written in full, flushes and closes. The writer is freed either
 * way; on failure the file is left for the caller to remove. */
hy_status hy_gguf_w_finish(struct hy_gguf_w *w, struct hy_err *err);
void hy_gguf_w_abort(struct hy_gguf_w *w); /* closes and frees; accepts NULL */

#endif
