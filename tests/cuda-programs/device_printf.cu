// Models cuda-samples 0_Introduction/simplePrintf: printf from kernels (integers, floats,
// strings, %x and %c, several arguments, a device-side string) in a 2x2 grid of 4x2
// threads. The program captures its own standard output (a temporary file behind fd 1
// around the launch and cudaDeviceSynchronize, which flushes the device's printf
// buffer), and checks the captured lines, sorted, against the lines the host formats
// itself with the same format strings.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <unistd.h>
#include <cuda_runtime.h>

#include "check.h"

__device__ const char *names[2] = {"even", "odd"};

__global__ void testKernel(int val) {
    int block = blockIdx.y * gridDim.x + blockIdx.x;
    int thread = threadIdx.y * blockDim.x + threadIdx.x;
    printf("[%d, %d]:\t\tValue is:%d\n", block, thread, val);
    printf("block %d thread %d: %s, %5.2f, 0x%08x, %c, %lld\n", block, thread, names[thread & 1],
           thread * 0.25f + block, block * 0x1000 + thread, 'a' + thread, 1000000000000LL * block + thread);
}

int main() {
    fflush(stdout);
    char path[] = "/tmp/device_printf.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) { perror("mkstemp"); return 1; }
    int saved = dup(1);
    dup2(fd, 1);
    dim3 grid(2, 2), block(4, 2);
    testKernel<<<grid, block>>>(10);
    cudaError_t launch = cudaGetLastError();
    cudaError_t sync = cudaDeviceSynchronize();
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    CHECK(launch);
    CHECK(sync);

    FILE *f = fopen(path, "r");
    std::vector<std::string> got, want;
    char line[512];
    while (f && fgets(line, sizeof line, f)) got.push_back(line);
    if (f) fclose(f);
    unlink(path);
    const char *hostNames[2] = {"even", "odd"};
    for (int b = 0; b < 4; b++)
        for (int t = 0; t < 8; t++) {
            snprintf(line, sizeof line, "[%d, %d]:\t\tValue is:%d\n", b, t, 10);
            want.push_back(line);
            snprintf(line, sizeof line, "block %d thread %d: %s, %5.2f, 0x%08x, %c, %lld\n", b, t, hostNames[t & 1],
                     (double)(t * 0.25f + b), b * 0x1000 + t, 'a' + t, 1000000000000LL * b + t);
            want.push_back(line);
        }
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    for (auto &l : got) printf("device: %s", l.c_str());
    int errors = 0;
    if (got != want) {
        errors++;
        fprintf(stderr, "%zu lines captured, want %zu\n", got.size(), want.size());
        for (size_t i = 0; i < want.size() && i < got.size(); i++)
            if (got[i] != want[i]) {
                fprintf(stderr, "first difference: got %swant %s", got[i].c_str(), want[i].c_str());
                break;
            }
    }
    if (errors) {
        printf("FAIL: the device's printf output differs\n");
        return 1;
    }
    printf("PASS\n");
    return 0;
}
