#include <cassert>
__device__ __noinline__ float helper(float x) { return x * x + 1.0f; }
extern "C" __global__ void checked_sum(const float* a, float* out, int n) {
    assert(blockDim.x == 256);
    float s = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        s += helper(a[i]);
    }
    __syncthreads();
    out[threadIdx.x] = s;
}
extern "C" __global__ void second(const float* a, float* out, int n) {
    float s = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        if (a[i] > 0) s += a[i]; else s -= helper(a[i]);
    }
    out[threadIdx.x] = s;
}
