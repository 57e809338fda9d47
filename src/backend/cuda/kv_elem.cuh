/* kv_elem.cuh: loads and stores of KV pool elements for kernels templated on the pool's
 * element type (float, or __nv_bfloat16: rounded to nearest even when stored, widened
 * exactly when read; the kernels compute in float32 either way). */
#ifndef HY_BACKEND_CUDA_KV_ELEM_CUH
#define HY_BACKEND_CUDA_KV_ELEM_CUH

#include <cuda_bf16.h>

__device__ __forceinline__ float kv_ld(const float *p) { return __ldg(p); }
__device__ __forceinline__ float kv_ld(const __nv_bfloat16 *p) { return __bfloat162float(__ldg(p)); }

__device__ __forceinline__ void kv_st(float *p, float v) { *p = v; }
__device__ __forceinline__ void kv_st(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }

/* Four consecutive elements (16-byte aligned for float, 8-byte for bf16). */
__device__ __forceinline__ float4 kv_ld4(const float *p) { return __ldg((const float4 *)p); }
__device__ __forceinline__ float4 kv_ld4(const __nv_bfloat16 *p)
{
    const uint2 u = __ldg((const uint2 *)p);
    return make_float4(__uint_as_float(u.x << 16), __uint_as_float(u.x & 0xffff0000u),
                       __uint_as_float(u.y << 16), __uint_as_float(u.y & 0xffff0000u));
}

#endif
