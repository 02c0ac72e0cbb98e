// gpudojo's CUDA-on-the-CPU header: force-included (g++ -include) before a learner's kernel
// so that the CUDA C courses teach compiles as plain C++20. Execution lives in launcher.cpp:
// every thread of a block is a fiber there, and the functions declared `extern` below are the
// points where a fiber hands control back (barriers, warp collectives), so they must stay out
// of line: an inlined barrier could not switch stacks, and the compiler must assume they change
// threadIdx and shared memory.
#ifndef GPUDOJO_CUDA_H
#define GPUDOJO_CUDA_H

#include <math.h>  // the libstdc++ wrapper: float overloads of sqrt, exp... in the global namespace
#include <assert.h>
#include <limits.h>
#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tuple>
#include <type_traits>
#include <utility>

#ifndef __CUDA_ARCH__
#define __CUDA_ARCH__ 800
#endif
#define __CUDACC__ 1
#define GPUDOJO_CPU_EMULATION 1

#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __grid_constant__
// One block runs at a time, so a function-level static is exactly one block's shared memory.
#define __shared__ static
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __builtin_assume_aligned_cuda(p, n) (p)

// --- vector types and dim3 ----------------------------------------------------------------
// Naturally aligned only (float4 is 4-aligned here, 16 on a GPU): arrays are placed to end
// exactly at a guard page, so their start need not be 16-aligned, and an over-aligned type
// would let the compiler emit aligned SSE moves that fault on it.
#define GPUDOJO_VEC(T, N2, N3, N4)                                                       \
    struct N2 { T x, y; };                                                               \
    struct N3 { T x, y, z; };                                                            \
    struct N4 { T x, y, z, w; };                                                         \
    inline N2 make_##N2(T x, T y) { return N2{x, y}; }                                   \
    inline N3 make_##N3(T x, T y, T z) { return N3{x, y, z}; }                           \
    inline N4 make_##N4(T x, T y, T z, T w) { return N4{x, y, z, w}; }
GPUDOJO_VEC(float, float2, float3, float4)
GPUDOJO_VEC(double, double2, double3, double4)
GPUDOJO_VEC(int, int2, int3, int4)
GPUDOJO_VEC(unsigned int, uint2, uint3, uint4)
GPUDOJO_VEC(long long, longlong2, longlong3, longlong4)
GPUDOJO_VEC(unsigned long long, ulonglong2, ulonglong3, ulonglong4)
GPUDOJO_VEC(signed char, char2, char3, char4)
GPUDOJO_VEC(unsigned char, uchar2, uchar3, uchar4)
GPUDOJO_VEC(short, short2, short3, short4)
GPUDOJO_VEC(unsigned short, ushort2, ushort3, ushort4)
#undef GPUDOJO_VEC

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

// The scheduler rewrites threadIdx before it resumes each fiber: one OS thread runs a block.
extern uint3 threadIdx;
extern uint3 blockIdx;
extern dim3 blockDim;
extern dim3 gridDim;
constexpr int warpSize = 32;

// --- half precision (g++ 12 has _Float16 on x86-64) ---------------------------------------
typedef _Float16 __half;
typedef _Float16 half;
inline __half __float2half(float f) { return (__half)f; }
inline __half __float2half_rn(float f) { return (__half)f; }
inline float __half2float(__half h) { return (float)h; }
inline __half __hadd(__half a, __half b) { return a + b; }
inline __half __hsub(__half a, __half b) { return a - b; }
inline __half __hmul(__half a, __half b) { return a * b; }
inline __half __hdiv(__half a, __half b) { return a / b; }
inline __half __hfma(__half a, __half b, __half c) { return (__half)((float)a * (float)b + (float)c); }

// --- bfloat16: float's 8 exponent bits with 7 mantissa bits. g++ 12 has no __bf16, so a struct
// holding the top 16 bits of a float. Each operation is done in float and rounded once to the
// nearest bfloat16 (ties to even), as sm_80's bf16 instructions round their results; NaN stays NaN.
inline unsigned short gpudojo_bf16_bits(float f) {
    unsigned u;
    __builtin_memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);  // a quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}
// A double rounded once to bfloat16: first to float rounding to odd (an inexact result keeps its
// lowest bit set, so a tie at bfloat16's precision cannot be made up), then to nearest even.
inline unsigned short gpudojo_bf16_bits(double d) {
    float f = (float)d;
    if (f == f && !__builtin_isinf(f) && (double)f != d) {
        unsigned u;
        __builtin_memcpy(&u, &f, 4);
        if (!(u & 1u)) {
            // (float)d rounded to the even neighbour: the odd one lies between it and d.
            bool away = __builtin_fabs((double)f) > __builtin_fabs(d);
            u = away ? u - 1u : u + 1u;
            __builtin_memcpy(&f, &u, 4);
        }
    }
    return gpudojo_bf16_bits(f);
}
struct __nv_bfloat16 {
    unsigned short x;
    __nv_bfloat16() = default;
    __nv_bfloat16(float f) : x(gpudojo_bf16_bits(f)) {}
    __nv_bfloat16(double d) : x(gpudojo_bf16_bits(d)) {}
    __nv_bfloat16(int i) : x(gpudojo_bf16_bits((float)i)) {}
    operator float() const {
        unsigned u = (unsigned)x << 16;
        float f;
        __builtin_memcpy(&f, &u, 4);
        return f;
    }
};
typedef __nv_bfloat16 nv_bfloat16;
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __double2bfloat16(double d) { return __nv_bfloat16(d); }
inline float __bfloat162float(__nv_bfloat16 h) { return (float)h; }
inline __nv_bfloat16 operator+(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a + (float)b; }
inline __nv_bfloat16 operator-(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a - (float)b; }
inline __nv_bfloat16 operator*(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a * (float)b; }
inline __nv_bfloat16 operator/(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a / (float)b; }
inline __nv_bfloat16 operator-(__nv_bfloat16 a) { return -(float)a; }
inline __nv_bfloat16& operator+=(__nv_bfloat16& a, __nv_bfloat16 b) { return a = a + b; }
inline __nv_bfloat16& operator-=(__nv_bfloat16& a, __nv_bfloat16 b) { return a = a - b; }
inline __nv_bfloat16& operator*=(__nv_bfloat16& a, __nv_bfloat16 b) { return a = a * b; }
inline __nv_bfloat16& operator/=(__nv_bfloat16& a, __nv_bfloat16 b) { return a = a / b; }
inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) { return a + b; }
inline __nv_bfloat16 __hsub(__nv_bfloat16 a, __nv_bfloat16 b) { return a - b; }
inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) { return a * b; }
inline __nv_bfloat16 __hdiv(__nv_bfloat16 a, __nv_bfloat16 b) { return a / b; }
inline __nv_bfloat16 __hneg(__nv_bfloat16 a) { return -a; }
// a*b + c rounded once: a*b is exact in double (8 x 8 significant bits); the sum's rounding error
// (Knuth's two-sum) turns its rounding into round-to-odd, which the conversion above keeps.
inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
    double p = (double)(float)a * (double)(float)b, q = (double)(float)c, s = p + q;
    double bp = s - q, err = (p - bp) + (q - (s - bp));
    if (err != 0.0 && __builtin_isfinite(s)) {
        unsigned long long u;
        __builtin_memcpy(&u, &s, 8);
        if (!(u & 1ull)) {
            u = ((err > 0.0) == (s > 0.0)) ? u + 1ull : u - 1ull;  // towards the exact sum
            __builtin_memcpy(&s, &u, 8);
        }
    }
    __nv_bfloat16 r;
    r.x = gpudojo_bf16_bits(s);
    return r;
}

// --- __nv_bfloat162: two bfloat16 lanes, x the low 16 bits and y the high; each lane computed
// as the scalar operation is (in float, rounded once to nearest even).
struct __nv_bfloat162 {
    __nv_bfloat16 x, y;
    __nv_bfloat162() = default;
    __nv_bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) : x(a), y(b) {}
};
typedef __nv_bfloat162 nv_bfloat162;
inline __nv_bfloat162 make_bfloat162(__nv_bfloat16 x, __nv_bfloat16 y) { return __nv_bfloat162(x, y); }
inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 lo, __nv_bfloat16 hi) { return __nv_bfloat162(lo, hi); }
inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 a) { return __nv_bfloat162(a, a); }
inline __nv_bfloat162 __floats2bfloat162_rn(float lo, float hi) { return __nv_bfloat162(lo, hi); }
inline __nv_bfloat162 __float2bfloat162_rn(float a) { return __nv_bfloat162(a, a); }
inline __nv_bfloat162 __float22bfloat162_rn(float2 a) { return __nv_bfloat162(a.x, a.y); }
inline float2 __bfloat1622float2(__nv_bfloat162 a) { return float2{(float)a.x, (float)a.y}; }
inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 a) { return a.x; }
inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 a) { return a.y; }
inline float __low2float(__nv_bfloat162 a) { return (float)a.x; }
inline float __high2float(__nv_bfloat162 a) { return (float)a.y; }
inline __nv_bfloat162 __lows2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.x, b.x); }
inline __nv_bfloat162 __highs2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.y, b.y); }
inline __nv_bfloat162 __low2bfloat162(__nv_bfloat162 a) { return __nv_bfloat162(a.x, a.x); }
inline __nv_bfloat162 __high2bfloat162(__nv_bfloat162 a) { return __nv_bfloat162(a.y, a.y); }
inline __nv_bfloat162 __lowhigh2highlow(__nv_bfloat162 a) { return __nv_bfloat162(a.y, a.x); }
inline __nv_bfloat162 __hadd2(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.x + b.x, a.y + b.y); }
inline __nv_bfloat162 __hsub2(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.x - b.x, a.y - b.y); }
inline __nv_bfloat162 __hmul2(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.x * b.x, a.y * b.y); }
inline __nv_bfloat162 __h2div(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.x / b.x, a.y / b.y); }
inline __nv_bfloat162 __hneg2(__nv_bfloat162 a) { return __nv_bfloat162(-a.x, -a.y); }
inline __nv_bfloat162 __hfma2(__nv_bfloat162 a, __nv_bfloat162 b, __nv_bfloat162 c) {
    return __nv_bfloat162(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y));
}
inline __nv_bfloat162 operator+(__nv_bfloat162 a, __nv_bfloat162 b) { return __hadd2(a, b); }
inline __nv_bfloat162 operator-(__nv_bfloat162 a, __nv_bfloat162 b) { return __hsub2(a, b); }
inline __nv_bfloat162 operator*(__nv_bfloat162 a, __nv_bfloat162 b) { return __hmul2(a, b); }
inline __nv_bfloat162 operator/(__nv_bfloat162 a, __nv_bfloat162 b) { return __h2div(a, b); }
inline __nv_bfloat162 operator-(__nv_bfloat162 a) { return __hneg2(a); }
inline __nv_bfloat162 operator+(__nv_bfloat162 a) { return a; }
inline __nv_bfloat162& operator+=(__nv_bfloat162& a, __nv_bfloat162 b) { return a = a + b; }
inline __nv_bfloat162& operator-=(__nv_bfloat162& a, __nv_bfloat162 b) { return a = a - b; }
inline __nv_bfloat162& operator*=(__nv_bfloat162& a, __nv_bfloat162 b) { return a = a * b; }
inline __nv_bfloat162& operator/=(__nv_bfloat162& a, __nv_bfloat162 b) { return a = a / b; }
// As cuda_bf16.h: == holds when both lanes are equal (ordered), != when both lanes differ or are
// unordered (a NaN).
inline bool __hbeq2(__nv_bfloat162 a, __nv_bfloat162 b) { return (float)a.x == (float)b.x && (float)a.y == (float)b.y; }
inline bool __hbneu2(__nv_bfloat162 a, __nv_bfloat162 b) { return !((float)a.x == (float)b.x) && !((float)a.y == (float)b.y); }
inline bool operator==(__nv_bfloat162 a, __nv_bfloat162 b) { return __hbeq2(a, b); }
inline bool operator!=(__nv_bfloat162 a, __nv_bfloat162 b) { return __hbneu2(a, b); }

// --- barriers and warp collectives (out of line: see the top of this file) ----------------
extern "C" void __syncthreads(void);
extern "C" int __syncthreads_count(int predicate);
extern "C" int __syncthreads_and(int predicate);
extern "C" int __syncthreads_or(int predicate);
extern "C" void __syncwarp(unsigned mask = 0xffffffffu);
extern "C" unsigned __activemask(void);
extern "C" unsigned long long gpudojo_warp(int op, unsigned mask, unsigned long long value, int param, int width);
inline void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

namespace gpudojo {
enum WarpOp { SHFL_IDX, SHFL_UP, SHFL_DOWN, SHFL_XOR, BALLOT, ANY, ALL, REDUCE_ADD, REDUCE_MIN, REDUCE_MAX,
              REDUCE_AND, REDUCE_OR, REDUCE_XOR, MATCH_ANY };

template <class T>
inline unsigned long long to_bits(T v) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "warp shuffles move values of at most 8 bytes");
    unsigned long long bits = 0;
    memcpy(&bits, &v, sizeof(T));
    return bits;
}
template <class T>
inline T from_bits(unsigned long long bits) {
    T v;
    memcpy(&v, &bits, sizeof(T));
    return v;
}
}  // namespace gpudojo

template <class T>
inline T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize) {
    return gpudojo::from_bits<T>(gpudojo_warp(gpudojo::SHFL_IDX, mask, gpudojo::to_bits(var), srcLane, width));
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
    return gpudojo::from_bits<T>(gpudojo_warp(gpudojo::SHFL_UP, mask, gpudojo::to_bits(var), (int)delta, width));
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
    return gpudojo::from_bits<T>(gpudojo_warp(gpudojo::SHFL_DOWN, mask, gpudojo::to_bits(var), (int)delta, width));
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize) {
    return gpudojo::from_bits<T>(gpudojo_warp(gpudojo::SHFL_XOR, mask, gpudojo::to_bits(var), laneMask, width));
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
    return (unsigned)gpudojo_warp(gpudojo::BALLOT, mask, pred != 0, 0, 32);
}
inline int __any_sync(unsigned mask, int pred) { return (int)gpudojo_warp(gpudojo::ANY, mask, pred != 0, 0, 32); }
inline int __all_sync(unsigned mask, int pred) { return (int)gpudojo_warp(gpudojo::ALL, mask, pred != 0, 0, 32); }
inline unsigned __uni_sync(unsigned mask, int pred) { return __all_sync(mask, pred) || !__any_sync(mask, pred); }
// param 1: the values are signed, so min and max compare them as such.
inline int __reduce_add_sync(unsigned mask, int v) { return (int)gpudojo_warp(gpudojo::REDUCE_ADD, mask, (unsigned)v, 1, 32); }
inline unsigned __reduce_add_sync(unsigned mask, unsigned v) { return (unsigned)gpudojo_warp(gpudojo::REDUCE_ADD, mask, v, 0, 32); }
inline int __reduce_min_sync(unsigned mask, int v) { return (int)gpudojo_warp(gpudojo::REDUCE_MIN, mask, (unsigned)v, 1, 32); }
inline unsigned __reduce_min_sync(unsigned mask, unsigned v) { return (unsigned)gpudojo_warp(gpudojo::REDUCE_MIN, mask, v, 0, 32); }
inline int __reduce_max_sync(unsigned mask, int v) { return (int)gpudojo_warp(gpudojo::REDUCE_MAX, mask, (unsigned)v, 1, 32); }
inline unsigned __reduce_max_sync(unsigned mask, unsigned v) { return (unsigned)gpudojo_warp(gpudojo::REDUCE_MAX, mask, v, 0, 32); }
inline unsigned __reduce_and_sync(unsigned mask, unsigned v) { return (unsigned)gpudojo_warp(gpudojo::REDUCE_AND, mask, v, 0, 32); }
inline unsigned __reduce_or_sync(unsigned mask, unsigned v) { return (unsigned)gpudojo_warp(gpudojo::REDUCE_OR, mask, v, 0, 32); }
inline unsigned __reduce_xor_sync(unsigned mask, unsigned v) { return (unsigned)gpudojo_warp(gpudojo::REDUCE_XOR, mask, v, 0, 32); }
template <class T>
inline unsigned __match_any_sync(unsigned mask, T v) {
    return (unsigned)gpudojo_warp(gpudojo::MATCH_ANY, mask, gpudojo::to_bits(v), 0, 32);
}

// --- atomics ------------------------------------------------------------------------------
// Fibers switch only at barriers and warp collectives, so a read-modify-write is never cut in
// two; the __atomic builtins keep them right should blocks ever run on several OS threads.
#define GPUDOJO_ATOMIC_INT(T)                                                                                \
    inline T atomicAdd(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }                      \
    inline T atomicExch(T* p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }                    \
    inline T atomicAnd(T* p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }                      \
    inline T atomicOr(T* p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }                        \
    inline T atomicXor(T* p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); }                      \
    inline T atomicCAS(T* p, T compare, T v) {                                                               \
        __atomic_compare_exchange_n(p, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);              \
        return compare;                                                                                      \
    }                                                                                                        \
    inline T atomicMin(T* p, T v) {                                                                          \
        T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                                        \
        while (v < old && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) \
            ;                                                                                                \
        return old;                                                                                          \
    }                                                                                                        \
    inline T atomicMax(T* p, T v) {                                                                          \
        T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                                        \
        while (v > old && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) \
            ;                                                                                                \
        return old;                                                                                          \
    }
GPUDOJO_ATOMIC_INT(int)
GPUDOJO_ATOMIC_INT(unsigned int)
GPUDOJO_ATOMIC_INT(unsigned long long)
#undef GPUDOJO_ATOMIC_INT
inline long long atomicMin(long long* p, long long v) {
    long long old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    return old;
}
inline long long atomicMax(long long* p, long long v) {
    long long old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > old && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    return old;
}
inline int atomicSub(int* p, int v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }
inline unsigned atomicSub(unsigned* p, unsigned v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }
inline unsigned short atomicCAS(unsigned short* p, unsigned short compare, unsigned short v) {
    __atomic_compare_exchange_n(p, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return compare;
}
inline unsigned atomicInc(unsigned* p, unsigned limit) {
    unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(p, &old, old >= limit ? 0u : old + 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    return old;
}
inline unsigned atomicDec(unsigned* p, unsigned limit) {
    unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(p, &old, (old == 0 || old > limit) ? limit : old - 1, true, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
        ;
    return old;
}
namespace gpudojo {
template <class F, class Op>
inline F atomic_float(F* p, Op op) {
    F old, next;
    __atomic_load(p, &old, __ATOMIC_RELAXED);
    do next = op(old);
    while (!__atomic_compare_exchange(p, &old, &next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return old;
}
}  // namespace gpudojo
inline float atomicAdd(float* p, float v) { return gpudojo::atomic_float(p, [v](float o) { return o + v; }); }
inline double atomicAdd(double* p, double v) { return gpudojo::atomic_float(p, [v](double o) { return o + v; }); }
inline float atomicExch(float* p, float v) { return gpudojo::atomic_float(p, [v](float) { return v; }); }
// The _block and _system scopes only matter between blocks running at once; here they are one.
#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd
#define atomicSub_block atomicSub
#define atomicMax_block atomicMax
#define atomicMin_block atomicMin
#define atomicCAS_block atomicCAS
#define atomicExch_block atomicExch

// --- math: CUDA's names and fast intrinsics over the C library ----------------------------
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
inline std::common_type_t<A, B> min(A a, B b) {
    std::common_type_t<A, B> x = a, y = b;
    return y < x ? y : x;
}
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
inline std::common_type_t<A, B> max(A a, B b) {
    std::common_type_t<A, B> x = a, y = b;
    return y > x ? y : x;
}
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float fdividef(float a, float b) { return a / b; }
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return exp10f(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline float __powf(float a, float b) { return powf(a, b); }
inline void __sincosf(float x, float* s, float* c) { sincosf(x, s, c); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline float normcdff(float x) { return 0.5f * erfcf(-x * 0.70710678f); }
inline double normcdf(double x) { return 0.5 * erfc(-x * 0.7071067811865476); }
inline float __int_as_float(int v) { return gpudojo::from_bits<float>((unsigned)v); }
inline int __float_as_int(float v) { return (int)(unsigned)gpudojo::to_bits(v); }
inline float __uint_as_float(unsigned v) { return gpudojo::from_bits<float>(v); }
inline unsigned __float_as_uint(float v) { return (unsigned)gpudojo::to_bits(v); }
inline double __longlong_as_double(long long v) { return gpudojo::from_bits<double>((unsigned long long)v); }
inline long long __double_as_longlong(double v) { return (long long)gpudojo::to_bits(v); }
inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
inline int __float2int_rz(float x) { return (int)x; }
inline int __float2int_rd(float x) { return (int)floorf(x); }
inline int __float2int_ru(float x) { return (int)ceilf(x); }
inline float __int2float_rn(int x) { return (float)x; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}
inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline int __mul24(int a, int b) { return (int)((long long)((a << 8) >> 8) * ((b << 8) >> 8)); }
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
inline unsigned __sad(int a, int b, unsigned c) { return (unsigned)(a > b ? a - b : b - a) + c; }
inline unsigned __usad(unsigned a, unsigned b, unsigned c) { return (a > b ? a - b : b - a) + c; }
template <class T>
inline T __ldg(const T* p) { return *p; }
extern "C" long long clock64(void);  // nanoseconds here; clock() is the C library's
inline void __nanosleep(unsigned) {}

// Dynamic shared memory (`extern __shared__ T name[];` is rewritten to a pointer into this
// before compiling): a fixed, page-aligned block so that its address is known at load time.
#define GPUDOJO_DYNAMIC_SHARED_MAX (1 << 20)
extern "C" unsigned char gpudojo_dynamic_shared[];

// --- binding the run request's arguments to the kernel's parameters ------------------------
namespace gpudojo {
enum Dtype { F16, F32, F64, I8, I32, I64, U8, U32, U64, BF16 };
struct Arg {
    const char* name;
    int is_array;
    int dtype;
    void* ptr;
    double f;
    long long i;
    unsigned long long u;
};
extern "C" [[noreturn]] void gpudojo_bad_spec(const char* fmt, ...);
typedef void (*Body)(void*);
extern "C" void gpudojo_set_body(Body body, void* ctx);

template <class T>
constexpr int dtype_of() {
    if constexpr (std::is_same_v<T, _Float16>) return F16;
    else if constexpr (std::is_same_v<T, __nv_bfloat16>) return BF16;
    else if constexpr (std::is_same_v<T, float>) return F32;
    else if constexpr (std::is_same_v<T, double>) return F64;
    else if constexpr (std::is_integral_v<T> && sizeof(T) == 1) return std::is_signed_v<T> ? I8 : U8;
    else if constexpr (std::is_integral_v<T> && sizeof(T) == 4) return std::is_signed_v<T> ? I32 : U32;
    else if constexpr (std::is_integral_v<T> && sizeof(T) == 8) return std::is_signed_v<T> ? I64 : U64;
    else return -1;  // a struct or vector type: any array's bytes may be viewed as it, as on a GPU
}
extern const char* const dtype_names[];

template <class P>
P convert(const Arg& a, int index) {
    if constexpr (std::is_pointer_v<P>) {
        using T = std::remove_cv_t<std::remove_pointer_t<P>>;
        if (!a.is_array)
            gpudojo_bad_spec("parameter %d of the kernel is a pointer, but argument %s is a scalar", index + 1, a.name);
        constexpr int want = dtype_of<T>();
        if (want >= 0 && want != a.dtype)
            gpudojo_bad_spec("parameter %d of the kernel points to %s, but array %s is %s", index + 1,
                             dtype_names[want], a.name, dtype_names[a.dtype]);
        return static_cast<P>(a.ptr);
    } else if constexpr (std::is_arithmetic_v<P> || std::is_same_v<P, _Float16>) {
        if (a.is_array)
            gpudojo_bad_spec("parameter %d of the kernel is a scalar, but argument %s is an array", index + 1, a.name);
        if (a.dtype == F32 || a.dtype == F64) return static_cast<P>(a.f);
        if (a.dtype == U32 || a.dtype == U64) return static_cast<P>(a.u);
        return static_cast<P>(a.i);
    } else {
        static_assert(std::is_pointer_v<P> || std::is_arithmetic_v<P>,
                      "the CPU emulator passes only pointers and numbers to a kernel");
    }
}

template <class... P>
struct Bound {
    void (*kernel)(P...);
    std::tuple<P...> args;
    static void run(void* self) {
        auto* b = static_cast<Bound*>(self);
        std::apply(b->kernel, b->args);
    }
};

template <class... P, size_t... I>
void bind_each(void (*kernel)(P...), const Arg* args, std::index_sequence<I...>) {
    auto* b = new Bound<P...>{kernel, std::tuple<P...>(convert<P>(args[I], (int)I)...)};
    gpudojo_set_body(&Bound<P...>::run, b);
}

template <class... P>
void bind(void (*kernel)(P...), const Arg* args, int n) {
    if (n != (int)sizeof...(P))
        gpudojo_bad_spec("the kernel takes %d parameters, the request gives %d arguments", (int)sizeof...(P), n);
    bind_each(kernel, args, std::index_sequence_for<P...>{});
}
}  // namespace gpudojo

#endif
