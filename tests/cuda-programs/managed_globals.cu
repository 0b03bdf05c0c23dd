// Models cuda-samples' __managed__ variables (the Programming Guide's "Managed Memory"
// example of a __managed__ global, as in 0_Introduction/UnifiedMemoryStreams' successors):
// a __managed__ int and a __managed__ array that the host writes directly, kernels update,
// and the host reads after cudaDeviceSynchronize, with no cudaMemcpy. Checks the values
// against the host's arithmetic exactly.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#include "check.h"

__managed__ int m_count;
__managed__ float m_values[256];

__global__ void update(float scale) {
    int i = threadIdx.x;
    m_values[i] = m_values[i] * scale + i;
    atomicAdd(&m_count, 1);
}

int main() {
    int errors = 0;
    m_count = 5;
    for (int i = 0; i < 256; i++) m_values[i] = (float)(i % 17);
    update<<<1, 256>>>(2.0f);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    if (m_count != 5 + 256) { fprintf(stderr, "m_count = %d, want %d\n", m_count, 5 + 256); errors++; }
    for (int i = 0; i < 256; i++) {
        float want = (float)(i % 17) * 2.0f + i;
        if (m_values[i] != want && errors++ < 10) fprintf(stderr, "m_values[%d] = %g, want %g\n", i, m_values[i], want);
    }
    printf("__managed__ globals: count %d\n", m_count);
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
