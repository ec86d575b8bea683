// Probe - the DRAM bandwidth a device-to-device copy reaches on the GPU at hand: each thread
// moves 16-byte vectors (one 128-bit load and one 128-bit store each), four in flight per loop
// trip, grid-stride over a buffer many times the L2. Bytes counted: read + write (2 x the buffer),
// the same accounting as a GEMM's minimum traffic (A, B, C read; C written). A measurement, not a
// ladder stage: nothing here is registered. cuda_kernels/probes/peaks.py launches, times and
// checks it (the copy must equal its source).

extern "C" __global__ void dram_copy(const float4* __restrict__ src, float4* __restrict__ dst, long long n) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    // four independent loads before the stores: one thread keeps 64 bytes in flight
    for (; i + 3 * stride < n; i += 4 * stride) {
        const float4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a;
        dst[i + stride] = b;
        dst[i + 2 * stride] = c;
        dst[i + 3 * stride] = d;
    }
    for (; i < n; i += stride) dst[i] = src[i];
}
