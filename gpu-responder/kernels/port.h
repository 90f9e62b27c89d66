// backline kernel portability layer: the few operations whose spelling differs between
// CUDA (nvcc / NVRTC), HIP (hipcc / hiprtc) and host C++ (the host emulation, where a CPU
// thread runs the same kernel source against the same rings).
//
// Memory shared with the host (rings, the control block) is only ever reached through the
// bl_ld_* / bl_st_* functions below, at system scope:
//   - the controller writes a request's body, then its seq with a release store; the kernel
//     polls seq with bl_ld_acquire_sys and reads the body with bl_ld_relaxed_sys (never a
//     plain load, which may hit a stale L1 line once the ring wraps);
//   - the kernel writes a reply's body with bl_st_relaxed_sys, fences (bl_fence_sys), then
//     publishes seq with bl_st_release_sys; the controller polls with acquire.
// No read-modify-write atomics are used on host memory (x86 hosts offer none across PCIe).
//
// Block-level cooperation: every function of the persistent kernel runs on all threads of one
// block. bl_tid()/bl_nthreads() give the thread's index and the block size, bl_sync() is the
// block barrier, and bl_atomic_* act on block-shared scratch.
#ifndef BACKLINE_PORT_H
#define BACKLINE_PORT_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define BL_CUDA 1
#elif defined(__HIP__) || defined(__HIPCC_RTC__)
#define BL_HIP 1
#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif
#else
#define BL_HOST 1
#endif

typedef unsigned char bl_u8;
typedef unsigned int bl_u32;
typedef int bl_i32;
typedef unsigned long long bl_u64;
typedef long long bl_i64;

#define BL_STATIC_ASSERT(cond, msg) static_assert(cond, msg)

// ---------------------------------------------------------------------------------------
#if defined(BL_CUDA)

#define BL_DEV __device__ __forceinline__
#define BL_DEV_NOINLINE __device__ __noinline__
#define BL_KERNEL extern "C" __global__
#define BL_USER_FUNCTION extern "C" __device__

BL_DEV bl_u32 bl_tid() { return threadIdx.x; }
BL_DEV bl_u32 bl_nthreads() { return blockDim.x; }
BL_DEV void bl_sync() { __syncthreads(); }
extern __shared__ bl_u64 bl_smem_[];
BL_DEV void *bl_block_shared() { return bl_smem_; }

BL_DEV bl_u32 bl_ld_acquire_sys(const bl_u32 *p) {
    bl_u32 v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
BL_DEV bl_u32 bl_ld_relaxed_sys(const bl_u32 *p) {
    bl_u32 v;
    asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
// 16 bytes at a 16-byte aligned address, one transaction.
BL_DEV void bl_ld16_relaxed_sys(const bl_u32 *p, bl_u32 *d) {
    asm volatile("ld.relaxed.sys.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "l"(p)
                 : "memory");
}
BL_DEV void bl_st_relaxed_sys(bl_u32 *p, bl_u32 v) {
    asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
BL_DEV void bl_st16_relaxed_sys(bl_u32 *p, const bl_u32 *s) {
    asm volatile("st.relaxed.sys.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(s[0]),
                 "r"(s[1]), "r"(s[2]), "r"(s[3])
                 : "memory");
}
BL_DEV void bl_st_release_sys(bl_u32 *p, bl_u32 v) {
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
BL_DEV void bl_fence_sys() { __threadfence_system(); }
BL_DEV void bl_pause() {}

BL_DEV bl_u32 bl_atomic_min_u32(bl_u32 *p, bl_u32 v) { return atomicMin(p, v); }
BL_DEV bl_u64 bl_atomic_min_u64(bl_u64 *p, bl_u64 v) { return atomicMin(p, v); }
BL_DEV bl_u32 bl_atomic_or_u32(bl_u32 *p, bl_u32 v) { return atomicOr(p, v); }
BL_DEV bl_u32 bl_atomic_xor_u32(bl_u32 *p, bl_u32 v) { return atomicXor(p, v); }
BL_DEV bl_u32 bl_atomic_add_u32(bl_u32 *p, bl_u32 v) { return atomicAdd(p, v); }

BL_DEV double bl_tanh(double x) { return tanh(x); }
BL_DEV double bl_log(double x) { return log(x); }
BL_DEV bl_u64 bl_double_bits(double x) { return (bl_u64)__double_as_longlong(x); }
BL_DEV double bl_bits_double(bl_u64 b) { return __longlong_as_double((long long)b); }
BL_DEV bl_u32 bl_popc64(bl_u64 x) { return __popcll(x); }
#define BL_INF __longlong_as_double(0x7FF0000000000000LL)

// ---------------------------------------------------------------------------------------
#elif defined(BL_HIP)

#define BL_DEV __device__ __forceinline__
#define BL_DEV_NOINLINE __device__ __noinline__
#define BL_KERNEL extern "C" __global__
#define BL_USER_FUNCTION extern "C" __device__

BL_DEV bl_u32 bl_tid() { return threadIdx.x; }
BL_DEV bl_u32 bl_nthreads() { return blockDim.x; }
BL_DEV void bl_sync() { __syncthreads(); }
extern __shared__ bl_u64 bl_smem_[];
BL_DEV void *bl_block_shared() { return bl_smem_; }

// Host memory must be allocated hipHostMallocMapped | hipHostMallocCoherent: coarse-grained
// host memory is cached in L2 and a mailbox in it can stay stale forever.
BL_DEV bl_u32 bl_ld_acquire_sys(const bl_u32 *p) {
    return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM);
}
BL_DEV bl_u32 bl_ld_relaxed_sys(const bl_u32 *p) {
    return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}
BL_DEV void bl_ld16_relaxed_sys(const bl_u32 *p, bl_u32 *d) {
    for (int i = 0; i < 4; i++) d[i] = bl_ld_relaxed_sys(p + i);
}
BL_DEV void bl_st_relaxed_sys(bl_u32 *p, bl_u32 v) {
    __hip_atomic_store(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}
BL_DEV void bl_st16_relaxed_sys(bl_u32 *p, const bl_u32 *s) {
    for (int i = 0; i < 4; i++) bl_st_relaxed_sys(p + i, s[i]);
}
BL_DEV void bl_st_release_sys(bl_u32 *p, bl_u32 v) {
    __hip_atomic_store(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_SYSTEM);
}
BL_DEV void bl_fence_sys() { __threadfence_system(); }
BL_DEV void bl_pause() {}

BL_DEV bl_u32 bl_atomic_min_u32(bl_u32 *p, bl_u32 v) { return atomicMin(p, v); }
BL_DEV bl_u64 bl_atomic_min_u64(bl_u64 *p, bl_u64 v) { return atomicMin(p, v); }
BL_DEV bl_u32 bl_atomic_or_u32(bl_u32 *p, bl_u32 v) { return atomicOr(p, v); }
BL_DEV bl_u32 bl_atomic_xor_u32(bl_u32 *p, bl_u32 v) { return atomicXor(p, v); }
BL_DEV bl_u32 bl_atomic_add_u32(bl_u32 *p, bl_u32 v) { return atomicAdd(p, v); }

BL_DEV double bl_tanh(double x) { return tanh(x); }
BL_DEV double bl_log(double x) { return log(x); }
BL_DEV bl_u64 bl_double_bits(double x) { return (bl_u64)__double_as_longlong(x); }
BL_DEV double bl_bits_double(bl_u64 b) { return __longlong_as_double((long long)b); }
BL_DEV bl_u32 bl_popc64(bl_u64 x) { return __popcll(x); }
#define BL_INF __longlong_as_double(0x7FF0000000000000LL)

// ---------------------------------------------------------------------------------------
#else  // BL_HOST: the host emulation. One "block" is a set of CPU threads; see emu.cpp.

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#define BL_DEV static inline
#define BL_DEV_NOINLINE static
#define BL_KERNEL extern "C"
#define BL_USER_FUNCTION extern "C"

// The block a host thread runs in: its index, the block size, the barrier and the block's
// shared scratch. Set by the emulated launch before the kernel function is called.
struct BlEmuBlock {
    unsigned nthreads;
    void *shared;
    std::atomic<unsigned> arrived;
    std::atomic<unsigned> generation;
};
inline thread_local unsigned bl_emu_tid = 0;
inline thread_local BlEmuBlock *bl_emu_block = nullptr;

static inline bl_u32 bl_tid() { return bl_emu_tid; }
static inline bl_u32 bl_nthreads() { return bl_emu_block->nthreads; }
static inline void *bl_block_shared() { return bl_emu_block->shared; }
// A generation-counting barrier: the last thread to arrive opens the next generation. Waiters
// spin briefly, then yield (a host emulation must not starve a two-core machine).
static inline void bl_sync() {
    BlEmuBlock *b = bl_emu_block;
    if (b->nthreads == 1) return;
    unsigned gen = b->generation.load(std::memory_order_acquire);
    if (b->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == b->nthreads) {
        b->arrived.store(0, std::memory_order_relaxed);
        // Release: everything written before the barrier is seen after it (pairs with the
        // acquire load of the waiters).
        b->generation.store(gen + 1, std::memory_order_release);
        return;
    }
    for (unsigned spins = 0; b->generation.load(std::memory_order_acquire) == gen; spins++) {
        if (spins > 64) std::this_thread::yield();
    }
}

static inline bl_u32 bl_ld_acquire_sys(const bl_u32 *p) {
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
static inline bl_u32 bl_ld_relaxed_sys(const bl_u32 *p) {
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}
static inline void bl_ld16_relaxed_sys(const bl_u32 *p, bl_u32 *d) {
    for (int i = 0; i < 4; i++) d[i] = __atomic_load_n(p + i, __ATOMIC_RELAXED);
}
static inline void bl_st_relaxed_sys(bl_u32 *p, bl_u32 v) {
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
}
static inline void bl_st16_relaxed_sys(bl_u32 *p, const bl_u32 *s) {
    for (int i = 0; i < 4; i++) __atomic_store_n(p + i, s[i], __ATOMIC_RELAXED);
}
static inline void bl_st_release_sys(bl_u32 *p, bl_u32 v) {
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
static inline void bl_fence_sys() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void bl_pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

static inline bl_u32 bl_atomic_min_u32(bl_u32 *p, bl_u32 v) {
    bl_u32 old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_ACQ_REL,
                                                   __ATOMIC_RELAXED)) {
    }
    return old;
}
static inline bl_u64 bl_atomic_min_u64(bl_u64 *p, bl_u64 v) {
    bl_u64 old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_ACQ_REL,
                                                   __ATOMIC_RELAXED)) {
    }
    return old;
}
static inline bl_u32 bl_atomic_or_u32(bl_u32 *p, bl_u32 v) {
    return __atomic_fetch_or(p, v, __ATOMIC_ACQ_REL);
}
static inline bl_u32 bl_atomic_xor_u32(bl_u32 *p, bl_u32 v) {
    return __atomic_fetch_xor(p, v, __ATOMIC_ACQ_REL);
}
static inline bl_u32 bl_atomic_add_u32(bl_u32 *p, bl_u32 v) {
    return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
}

// glibc's tanh and log: the same functions backline-decoders calls from Rust.
static inline double bl_tanh(double x) { return std::tanh(x); }
static inline double bl_log(double x) { return std::log(x); }
static inline bl_u64 bl_double_bits(double x) {
    bl_u64 b;
    std::memcpy(&b, &x, 8);
    return b;
}
static inline double bl_bits_double(bl_u64 b) {
    double x;
    std::memcpy(&x, &b, 8);
    return x;
}
static inline bl_u32 bl_popc64(bl_u64 x) { return (bl_u32)__builtin_popcountll(x); }
#define BL_INF (__builtin_inf())

#endif

#endif
