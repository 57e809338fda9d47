/* ref.c: the plain C reference ops, the executable specification of backend.h.
 * Single-threaded, no SIMD, no cleverness. Long sums (mean of squares, dot products,
 * softmax denominators, attention's weighted sum) are accumulated in double so that the
 * reference is the accurate side of every comparison; everything else is float32 like the
 * PyTorch model. Weight data may be unaligned (it points into an mmapped safetensors file),
 * so weight elements are read with memcpy, never through a cast pointer. */
#include "backend/cpu/cpu.h"

#include <math.h>
#include <string.h>

/* Element i of a weight, as float32. */
static float weight_at(const struct hy_weight *w, int64_t i)
{
    const unsigned char *p = w->data;
    uint16_t h;
    float f;
    switch (w->dtype) {
    case HY_DTYPE_F32:
        memcpy(&f, p + i * 4, 4);
        return f;
    case HY_DTYPE_F16:
        memcpy(&h, p + i * 2, 2);
        return hy_f16_to_f32(h);
    case HY_DTYPE_BF16:
        memcpy(&h, p + i * 2, 2);
        return hy_bf16_to_f32(h);
    case HY_DTYPE_Q8_0: { /* element i of a row-major matrix whose rows are whole blocks */
        const unsigned char *b = p + (i / HY_Q8_0_BLOCK) * sizeof(struct hy_q8_0_block);
        int8_t q;
        memcpy(&h, b, 2);
        memcpy(&q, b + 2 + i % HY_Q8_0_BLOCK, 1);
        return hy_f16_to_f32(h) * (float)q;
    }
    case HY_DTYPE_Q4_0:
    case HY_DTYPE_Q4_K:
    case HY_DTYPE_Q6_K:
    case HY_DTYPE_Q4_G128: { /* the dequantizer on the block that holds element i */
        int64_t be = hy_dtype_block_elems(w->dtype);
        float blk[256];
        hy_dtype_to_f32(blk, p + (size_t)(i / be) * hy_dtype_size(w->dtype), w->dtype, (size_t)be);
        return blk[i % be];
    }
    default: break;
    }
    HY_ASSERT(!"unknown weight dtype");
    return 0.0f;
}

void hy_ref_embed(float *out, const struct hy_weight *table, const int32_t *ids, int T)
{
    for (int t = 0; t < T; t++) {
        HY_ASSERT(ids[t] >= 0 && ids[t] < table->rows);
        int64_t row = (int64_t)ids[t] * table->cols;
        if (hy_dtype_block_elems(table->dtype) > 1) { /* a GGUF Q4_K/Q6_K/... table: a row */
            hy_dtype_to_f32(out + (int64_t)t * table->cols,
                            (const unsigned char *)table->data +
                                (size_t)ids[t] * hy_dtype_row_bytes(table->dtype, table->cols),
                            table->dtype, (size_t)table->cols);
            continue;
        }
        for (int64_t c = 0; c < table->cols; c++)
            out[(int64_t)t * table->cols + c] = weight_at(table, row + c);
    }
}

void hy_ref_rmsnorm(float *out, const float *x, const struct hy_weight *w, int64_t rows, int64_t d,
                    float eps)
{
    HY_ASSERT(w->rows * w->cols == d);
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * d;
        float *yr = out + r * d;
        double ss = 0.0;
        for (int64_t i = 0; i < d; i++)
            ss += (double)xr[i] * xr[i];
        float inv = (float)(1.0 / sqrt(ss / (double)d + (double)eps));
        for (int64_t i = 0; i < d; i++)
            yr[i] = weight_at(w, i) * (xr[i] * inv);
    }
}

void hy_ref_matmul(float *out, const float *x, const struct hy_weight *w, int T)
{
    for (int t = 0; t < T; t++) {
        const float *xt = x + (int64_t)t * w->cols;
        for (int64_t r = 0; r < w->rows; r++) {
            double acc = 0.0;
            for (int64_t c = 0; c < w->cols; c++)
                acc += (double)xt[c] * weight_at(w, r * w->cols + c);
            out[(int64_t)t * w->rows + r] = (float)acc;
        }
    }
}

/* The angle is formed in float32 as transformers does (inv_freq · position, both fp32),
 * then cos and sin of that float value. At large positions this rounding of θ matters. */
void hy_ref_rope(float *x, const int32_t *pos, int T, int n_heads, int hd, const float *inv_freq)
{
    HY_ASSERT(hd % 2 == 0);
    int half = hd / 2;
    for (int t = 0; t < T; t++) {
        for (int h = 0; h < n_heads; h++) {
            float *v = x + ((int64_t)t * n_heads + h) * hd;
            for (int i = 0; i < half; i++) {
                float theta = (float)pos[t] * inv_freq[i];
                float c = cosf(theta), s = sinf(theta);
                float a = v[i], b = v[i + half];
                v[i] = a * c - b * s;
                v[i + half] = b * c + a * s;
            }
        }
    }
}

/* Pool row holding position p of a sequence with block table `blocks`. */
static int64_t pool_row(const int32_t *blocks, int bs, int p)
{
    return (int64_t)blocks[p / bs] * bs + p % bs;
}

/* One query row against positions 0..n-1 of one KV head (k, v already offset to the head;
 * rows kv_stride floats apart, found through the block table). Two passes: the maximum
 * score, then exp-weights and the weighted sum of V, both in double. acc: hd doubles. */
static void attend_one(float *out, const float *q, const float *k, const float *v,
                       int64_t kv_stride, const int32_t *blocks, int bs, int n, int hd,
                       float scale, double *acc)
{
    double max = -INFINITY;
    for (int j = 0; j < n; j++) {
        const float *kj = k + pool_row(blocks, bs, j) * kv_stride;
        double s = 0.0;
        for (int i = 0; i < hd; i++)
            s += (double)q[i] * kj[i];
        s *= scale;
        if (s > max)
            max = s;
    }
    double sum = 0.0;
    for (int i = 0; i < hd; i++)
        acc[i] = 0.0;
    for (int j = 0; j < n; j++) {
        int64_t r = pool_row(blocks, bs, j) * kv_stride;
        double s = 0.0;
        for (int i = 0; i < hd; i++)
            s += (double)q[i] * k[r + i];
        double p = exp(s * scale - max);
        sum += p;
        for (int i = 0; i < hd; i++)
            acc[i] += p * v[r + i];
    }
    for (int i = 0; i < hd; i++)
        out[i] = (float)(acc[i] / sum);
}

void hy_ref_attention(float *out, const float *q, const float *k_pool, const float *v_pool, int bs,
                      const struct hy_attn_seq *seqs, int n_seqs, int n_head, int n_kv, int hd,
                      float scale)
{
    HY_ASSERT(n_kv > 0 && n_head % n_kv == 0 && bs > 0);
    HY_ASSERT(hd > 0 && hd <= HY_CPU_MAX_HEAD_DIM);
    double acc[HY_CPU_MAX_HEAD_DIM];
    int group = n_head / n_kv;
    int64_t kv_stride = (int64_t)n_kv * hd;
    for (int si = 0; si < n_seqs; si++) {
        const struct hy_attn_seq *sq = &seqs[si];
        HY_ASSERT(sq->pos0 >= 0 && sq->n_tokens >= 0 && sq->row >= 0);
        for (int t = 0; t < sq->n_tokens; t++) {
            for (int h = 0; h < n_head; h++) {
                int64_t qo = ((int64_t)(sq->row + t) * n_head + h) * hd;
                int64_t ko = (int64_t)(h / group) * hd;
                attend_one(out + qo, q + qo, k_pool + ko, v_pool + ko, kv_stride, sq->blocks, bs,
                           sq->pos0 + t + 1, hd, scale, acc);
            }
        }
    }
}

void hy_ref_kv_store(float *pool, const float *rows, const int32_t *slots, int T, int64_t cols)
{
    for (int t = 0; t < T; t++)
        memcpy(pool + (int64_t)slots[t] * cols, rows + (int64_t)t * cols, (size_t)cols * 4);
}

void hy_ref_copy_rows(float *dst, const float *src, const int32_t *idx, int n, int64_t cols)
{
    for (int i = 0; i < n; i++)
        memmove(dst + (int64_t)i * cols, src + (int64_t)idx[i] * cols, (size_t)cols * 4);
}

void hy_ref_silu_mul(float *out, const float *gate, const float *up, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

void hy_ref_add(float *x, const float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] += y[i];
}
