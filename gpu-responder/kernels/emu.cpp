// The host emulation's launcher: runs a kernel of persistent.cu as one "block" of CPU threads.
// Thread 0 is the calling thread; the others are started here and joined before returning.
// Compiled together with persistent.cu by a host C++ compiler (build.rs for the built-in
// kernels, the runtime for a user kernel), never by a GPU compiler.
#include "persistent.cu"

#include <pthread.h>

#include <cstdio>
#include <new>
#include <vector>

template <typename F>
static int bl_emu_block_run(unsigned nthreads, F body) {
    if (nthreads == 0) nthreads = 1;
    void *shared = ::operator new(BL_SHARED_BYTES, std::align_val_t(64), std::nothrow);
    if (!shared) return -1;
    std::memset(shared, 0, BL_SHARED_BYTES);
    BlEmuBlock block;
    block.nthreads = nthreads;
    block.shared = shared;
    block.arrived.store(0);
    block.generation.store(0);
    std::vector<std::thread> others;
    try {
        for (unsigned t = 1; t < nthreads; t++)
            others.emplace_back([&block, &body, t] {
                char name[16];
                std::snprintf(name, sizeof name, "gpuemu-t%u", t);
                pthread_setname_np(pthread_self(), name);
                bl_emu_tid = t;
                bl_emu_block = &block;
                body();
            });
    } catch (...) {
        // Threads that did start wait at the first barrier forever; the launch failed.
        for (auto &th : others) th.detach();
        return -2;
    }
    bl_emu_tid = 0;
    bl_emu_block = &block;
    body();
    for (auto &th : others) th.join();
    ::operator delete(shared, std::align_val_t(64));
    return 0;
}

// Runs the persistent kernel until the host asks it to stop. 0 = ok, < 0 = could not start.
extern "C" int bl_emu_run_persistent(const BlLaunch *a, unsigned nthreads) {
    return bl_emu_block_run(nthreads, [a] { bl_persistent(a); });
}

// Runs the floor kernel (one thread) until the host asks it to stop.
extern "C" int bl_emu_run_floor(const BlFloor *f) {
    return bl_emu_block_run(1, [f] { bl_floor(f); });
}

// The size the host must reserve for the kernel's block-shared state.
extern "C" unsigned bl_emu_shared_bytes() { return (unsigned)sizeof(BlShared); }
