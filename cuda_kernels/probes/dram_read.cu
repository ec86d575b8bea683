// Probe - what one launch that only reads N bytes takes, at sizes a matrix-vector row has
// (16 MiB - 1 GiB): the ceiling a bandwidth-bound row's "% of the device copy" is read against.
// Each thread sums 16-byte vectors, four loads in flight per loop trip, grid-stride; each block
// writes one sum (the loads can't be dropped). A measurement, not a ladder stage: nothing here is
// registered. reproduce/read_probe.py launches and times it with the engine.

extern "C" __global__ void dram_read(const float4* __restrict__ src, long long n, float* __restrict__ out) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
    for (; i + 3 * stride < n; i += 4 * stride) {
        const float4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        s.x += (a.x + b.x) + (c.x + d.x);
        s.y += (a.y + b.y) + (c.y + d.y);
        s.z += (a.z + b.z) + (c.z + d.z);
        s.w += (a.w + b.w) + (c.w + d.w);
    }
    for (; i < n; i += stride) {
        const float4 a = src[i];
        s.x += a.x; s.y += a.y; s.z += a.z; s.w += a.w;
    }
    __shared__ float part[1024];
    part[threadIdx.x] = (s.x + s.y) + (s.z + s.w);
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.f;
        for (int j = 0; j < blockDim.x; ++j) t += part[j];
        out[blockIdx.x] = t;
    }
}
