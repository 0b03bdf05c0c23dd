// Models cuda-samples 0_Introduction/simpleCallback: work in several streams, each
// followed by host work enqueued with cudaLaunchHostFunc (and the older
// cudaStreamAddCallback), which must run after the stream's earlier work completed (the
// callback reads the copied-back results) and before later work in the stream (a second
// kernel reads what the callback wrote into pinned, mapped memory). Checks the
// callbacks' counts and every value against the host's arithmetic.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#include "check.h"

__global__ void square(const int *in, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * in[i];
}

__global__ void addFlag(int *out, const volatile int *flag, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] += *flag;
}

struct Work {
    int id, n;
    int *host;          // pinned, the copied-back squares
    int *flag;          // pinned and mapped: the callback writes, a later kernel reads
    long long sum;      // computed by the callback from `host`
    bool sawAll;
};

static std::atomic<int> hostFuncs(0), callbacks(0);

static void CUDART_CB afterCopy(void *data) {
    Work *w = (Work *)data;
    long long sum = 0;
    bool all = true;
    for (int i = 0; i < w->n; i++) {
        sum += w->host[i];
        all = all && w->host[i] == (i + w->id) * (i + w->id);
    }
    w->sum = sum;
    w->sawAll = all;
    *w->flag = 1000 * (w->id + 1);
    hostFuncs++;
}

static void CUDART_CB legacyCallback(cudaStream_t, cudaError_t status, void *data) {
    if (status == cudaSuccess) callbacks += *(int *)data;
}

int main() {
    const int nStreams = 4, n = 4096;
    int errors = 0;
    Work work[nStreams];
    cudaStream_t streams[nStreams];
    int *dIn[nStreams], *dOut[nStreams], *flags, *dFlags;
    int *input;
    CHECK(cudaHostAlloc(&flags, nStreams * sizeof(int), cudaHostAllocMapped));
    CHECK(cudaHostGetDevicePointer((void **)&dFlags, flags, 0));
    CHECK(cudaMallocHost(&input, n * sizeof(int)));
    int increments[nStreams];
    for (int s = 0; s < nStreams; s++) {
        CHECK(cudaStreamCreate(&streams[s]));
        CHECK(cudaMalloc(&dIn[s], n * sizeof(int)));
        CHECK(cudaMalloc(&dOut[s], n * sizeof(int)));
        CHECK(cudaMallocHost(&work[s].host, n * sizeof(int)));
        work[s].id = s;
        work[s].n = n;
        work[s].flag = &flags[s];
        flags[s] = 0;
        increments[s] = s + 1;
        for (int i = 0; i < n; i++) work[s].host[i] = -1;
    }
    for (int s = 0; s < nStreams; s++) {
        for (int i = 0; i < n; i++) work[s].host[i] = i + s;
        CHECK(cudaMemcpyAsync(dIn[s], work[s].host, n * sizeof(int), cudaMemcpyHostToDevice, streams[s]));
        square<<<n / 128, 128, 0, streams[s]>>>(dIn[s], dOut[s], n);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpyAsync(work[s].host, dOut[s], n * sizeof(int), cudaMemcpyDeviceToHost, streams[s]));
        CHECK(cudaLaunchHostFunc(streams[s], afterCopy, &work[s]));
        addFlag<<<n / 128, 128, 0, streams[s]>>>(dOut[s], dFlags + s, n);
        CHECK(cudaGetLastError());
        CHECK(cudaStreamAddCallback(streams[s], legacyCallback, &increments[s], 0));
    }
    CHECK(cudaDeviceSynchronize());
    if (hostFuncs != nStreams) { fprintf(stderr, "%d host functions ran\n", hostFuncs.load()); errors++; }
    if (callbacks != 1 + 2 + 3 + 4) { fprintf(stderr, "callbacks summed %d\n", callbacks.load()); errors++; }
    int *back = new int[n];
    for (int s = 0; s < nStreams; s++) {
        long long want = 0;
        for (int i = 0; i < n; i++) want += (long long)(i + s) * (i + s);
        if (!work[s].sawAll || work[s].sum != want) {
            fprintf(stderr, "stream %d: the host function saw sum %lld (want %lld), all squares %d\n", s, work[s].sum, want, work[s].sawAll);
            errors++;
        }
        CHECK(cudaMemcpy(back, dOut[s], n * sizeof(int), cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i++) {
            int w = (i + s) * (i + s) + 1000 * (s + 1);
            if (back[i] != w && errors++ < 10) fprintf(stderr, "stream %d: out[%d] = %d, want %d\n", s, i, back[i], w);
        }
    }
    printf("%d host functions, callbacks summed %d\n", hostFuncs.load(), callbacks.load());
    for (int s = 0; s < nStreams; s++) {
        CHECK(cudaStreamDestroy(streams[s]));
        CHECK(cudaFree(dIn[s])); CHECK(cudaFree(dOut[s]));
        CHECK(cudaFreeHost(work[s].host));
    }
    CHECK(cudaFreeHost(flags)); CHECK(cudaFreeHost(input));
    delete[] back;
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
