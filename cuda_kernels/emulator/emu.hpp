// emu.hpp: run the stage .cu sources on a CPU, for correctness tests on machines with no GPU.
//
// Compiled with g++ as C++20, force-included before the loader's self-contained source. Each
// CUDA thread of a block is a fiber (ucontext) with its own stack; __syncthreads() switches
// back to the scheduler, which resumes every other thread of the block before any thread
// passes the barrier. Blocks run one after another, so `__shared__` (a function-local static
// here) is one array shared by the block's threads, and it keeps the previous block's data,
// as uninitialized shared memory would.
//
// What it checks that a CPU run otherwise wouldn't:
// * barrier placement: threads run in forward order in one phase and reverse order in the
//   next, so a missing barrier shows up as a thread reading data not yet written, or data a
//   faster thread has already overwritten;
// * barrier divergence (some threads exit while others wait at a barrier): reported;
// * 16-byte alignment of every float4 access (ld4/st4/cp_async16): reported;
// * out-of-bounds global accesses: the Python side puts a PROT_NONE page on both sides of each
//   buffer, one end flush against its guard (GuardedArray in __init__.py); the SIGSEGV is caught
//   and reported with its address. Writes into the slack at the other end are caught by a
//   canary check after the launch.
// * cp.async discipline: a copy lands only when its thread waits for its group
//   (cp.async.wait_group), the latest moment the GPU allows, so a stage read before
//   wait + barrier holds stale data; copies still in flight at thread exit are reported.
#pragma once
#include <signal.h>
#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#define GEMM_EMULATE 1
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))

struct uint3 { unsigned x, y, z; };
struct dim3 { unsigned x, y, z; };
struct alignas(16) float4 { float x, y, z, w; };
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

namespace emu {

inline uint3 thread_idx, block_idx;
inline dim3 block_dim, grid_dim;

// One cp.async copy, its source read at issue time (sources are read-only inputs).
struct PendingCopy {
    float* dst;
    float vals[4];
    int n;
};

struct Fiber {
    ucontext_t ctx;
    std::vector<char> stack;
    uint3 idx;
    bool done = false;
    bool at_barrier = false;
    std::vector<PendingCopy> open;                 // issued, not yet committed
    std::vector<std::vector<PendingCopy>> groups;  // committed, oldest first, not yet landed
};

inline ucontext_t sched_ctx;
inline Fiber* current = nullptr;
inline std::function<void()> body;
inline std::string error;
inline volatile bool failed = false;
inline std::vector<Fiber> fibers;
constexpr size_t STACK_BYTES = 256 * 1024;

[[noreturn]] inline void fail(const std::string& msg) {
    if (!failed) {
        char where[128];
        std::snprintf(where, sizeof where, " (block %u,%u,%u thread %u,%u,%u)", block_idx.x, block_idx.y,
                      block_idx.z, thread_idx.x, thread_idx.y, thread_idx.z);
        error = msg + where;
        failed = true;
    }
    setcontext(&sched_ctx);  // abandon this fiber; the scheduler sees `failed`
    std::abort();
}

inline void sync() {
    current->at_barrier = true;
    swapcontext(&current->ctx, &sched_ctx);
}

// cp.async, as late as the GPU may make it: a copy lands only when its thread waits for it
// (cp.async.wait_group), so reading a stage before wait + barrier reads stale data here.
// A zero-filling copy (valid = false) reads nothing on the GPU, but its address must still be
// a legal one: it is touched here, so an address past the matrix faults on the guard page.
inline void cp_async(float* dst, const float* src, int n, bool valid) {
    PendingCopy c{dst, {0, 0, 0, 0}, n};
    if (valid)
        for (int i = 0; i < n; ++i) c.vals[i] = src[i];
    else
        (void)*static_cast<const volatile float*>(src);
    current->open.push_back(c);
}
inline void cp_async_commit() {
    current->groups.push_back(std::move(current->open));
    current->open.clear();
}
inline void cp_async_wait(int pending) {
    auto& g = current->groups;
    while ((int)g.size() > pending) {
        for (const PendingCopy& c : g.front())
            for (int i = 0; i < c.n; ++i) c.dst[i] = c.vals[i];
        g.erase(g.begin());
    }
}

inline void fiber_entry() {
    body();
    size_t inflight = current->open.size();
    for (auto& g : current->groups) inflight += g.size();
    if (inflight) fail(std::to_string(inflight) + " cp.async copies still in flight at thread exit");
    current->done = true;
}  // returns to uc_link = sched_ctx

inline void on_segv(int, siginfo_t* si, void*) {
    char msg[96];
    std::snprintf(msg, sizeof msg, "invalid memory access at %p (out of bounds?)", si->si_addr);
    fail(msg);
}

template <class... P, size_t... I>
inline std::tuple<P...> unpack(void** args, std::index_sequence<I...>) {
    return std::tuple<P...>{*static_cast<std::remove_cv_t<P>*>(args[I])...};
}

// Runs kernel k over the grid; returns 0, or -1 with emu::error set.
template <class... P>
inline int launch(void (*k)(P...), const unsigned* dims, void** args) {
    grid_dim = dim3{dims[0], dims[1], dims[2]};
    block_dim = dim3{dims[3], dims[4], dims[5]};
    const auto params = unpack<P...>(args, std::index_sequence_for<P...>{});
    body = [&] { std::apply(k, params); };
    const unsigned n = block_dim.x * block_dim.y * block_dim.z;
    if (fibers.size() < n) fibers.resize(n);
    for (auto& f : fibers)
        if (f.stack.empty()) f.stack.resize(STACK_BYTES);

    struct sigaction sa {}, old_segv {}, old_bus {};
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, &old_segv);
    sigaction(SIGBUS, &sa, &old_bus);
    failed = false;
    error.clear();

    for (unsigned bz = 0; bz < grid_dim.z && !failed; ++bz)
        for (unsigned by = 0; by < grid_dim.y && !failed; ++by)
            for (unsigned bx = 0; bx < grid_dim.x && !failed; ++bx) {
                block_idx = uint3{bx, by, bz};
                for (unsigned t = 0; t < n; ++t) {
                    Fiber& f = fibers[t];
                    f.idx = uint3{t % block_dim.x, (t / block_dim.x) % block_dim.y, t / (block_dim.x * block_dim.y)};
                    f.done = f.at_barrier = false;
                    f.open.clear();
                    f.groups.clear();
                    getcontext(&f.ctx);
                    f.ctx.uc_stack.ss_sp = f.stack.data();
                    f.ctx.uc_stack.ss_size = f.stack.size();
                    f.ctx.uc_link = &sched_ctx;
                    makecontext(&f.ctx, fiber_entry, 0);
                }
                for (unsigned phase = 0; !failed; ++phase) {
                    for (unsigned i = 0; i < n && !failed; ++i) {
                        Fiber& f = fibers[phase % 2 ? n - 1 - i : i];
                        if (f.done) continue;
                        f.at_barrier = false;
                        current = &f;
                        thread_idx = f.idx;
                        swapcontext(&sched_ctx, &f.ctx);
                    }
                    if (failed) break;
                    unsigned done = 0;
                    for (unsigned i = 0; i < n; ++i) done += fibers[i].done;
                    if (done == n) break;
                    if (done != 0) {
                        error = "barrier divergence: " + std::to_string(done) + " of " + std::to_string(n) +
                                " threads exited while others wait at __syncthreads";
                        failed = true;
                    }
                }
            }
    sigaction(SIGSEGV, &old_segv, nullptr);
    sigaction(SIGBUS, &old_bus, nullptr);
    return failed ? -1 : 0;
}

}  // namespace emu

#define threadIdx (emu::thread_idx)
#define blockIdx (emu::block_idx)
#define blockDim (emu::block_dim)
#define gridDim (emu::grid_dim)

inline void __syncthreads() { emu::sync(); }
// Atomic by construction, not by instruction: one OS thread runs the whole grid, blocks one
// after another and a block's threads as fibers that switch only inside __syncthreads (never
// inside this function), so no other emulated thread can run between the load and the store.
// What the emulator can't show is the GPU's varying order of atomics: its results are
// deterministic even for the atomic variants (their nondeterminism is a GPU test).
inline float atomicAdd(float* p, float v) {
    const float old = *p;
    *p = old + v;
    return old;
}
inline void gemm_emu_check_aligned16(const void* p) {
    if (reinterpret_cast<uintptr_t>(p) % 16) {
        char msg[96];
        std::snprintf(msg, sizeof msg, "misaligned 16-byte access at %p", p);
        emu::fail(msg);
    }
}

extern "C" const char* emu_error() { return emu::error.c_str(); }
