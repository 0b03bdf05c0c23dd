// Models cuda-samples 0_Introduction/simpleStreams and asyncAPI: an array split over four
// streams, each chunk copied in (cudaMemcpyAsync from pinned memory), incremented by a
// kernel and copied out in its own stream, with events timing the whole (and each stream)
// by cudaEventElapsedTime; cudaEventQuery/cudaStreamQuery polled until done, as asyncAPI
// does; cudaStreamWaitEvent ordering a consumer stream after a producer stream's kernel;
// and an event created with cudaEventDisableTiming refusing cudaEventElapsedTime.
// Checks the data against the host's arithmetic exactly.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#include "check.h"

__global__ void incrementKernel(int *g_data, int inc_value, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) g_data[idx] = g_data[idx] + inc_value;
}

// A slow producer: many dependent steps, so that a consumer not ordered after it would
// read stale data.
__global__ void produce(int *data, int n, int steps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned v = i;
    for (int s = 0; s < steps; s++) v = (v * 1103515245u + 12345u) & 0x7fffffffu;
    data[i] = (int)v;
}

__global__ void consume(const int *in, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] ^ 0x1234;
}

int main() {
    int errors = 0;
    const int nStreams = 4, n = 1 << 20, chunk = n / nStreams, inc = 26;
    int *h;
    CHECK(cudaMallocHost(&h, n * sizeof(int)));
    for (int i = 0; i < n; i++) h[i] = i;
    int *d;
    CHECK(cudaMalloc(&d, n * sizeof(int)));
    cudaStream_t streams[nStreams];
    cudaEvent_t streamStart[nStreams], streamStop[nStreams], start, stop;
    for (int s = 0; s < nStreams; s++) {
        CHECK(cudaStreamCreate(&streams[s]));
        CHECK(cudaEventCreate(&streamStart[s]));
        CHECK(cudaEventCreate(&streamStop[s]));
    }
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    CHECK(cudaEventRecord(start, 0));
    for (int s = 0; s < nStreams; s++) {
        int *hs = h + s * chunk, *ds = d + s * chunk;
        CHECK(cudaEventRecord(streamStart[s], streams[s]));
        CHECK(cudaMemcpyAsync(ds, hs, chunk * sizeof(int), cudaMemcpyHostToDevice, streams[s]));
        incrementKernel<<<chunk / 256, 256, 0, streams[s]>>>(ds, inc, chunk);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpyAsync(hs, ds, chunk * sizeof(int), cudaMemcpyDeviceToHost, streams[s]));
        CHECK(cudaEventRecord(streamStop[s], streams[s]));
    }
    CHECK(cudaEventRecord(stop, 0));
    // Poll as asyncAPI does.
    unsigned long polls = 0;
    cudaError_t q;
    while ((q = cudaEventQuery(stop)) == cudaErrorNotReady) polls++;
    CHECK(q);
    for (int s = 0; s < nStreams; s++) CHECK(cudaStreamQuery(streams[s]));
    float total = 0;
    CHECK(cudaEventElapsedTime(&total, start, stop));
    printf("4 streams: %.3f ms (%lu polls before the stop event completed)\n", total, polls);
    if (!(total >= 0)) { fprintf(stderr, "elapsed time %f\n", total); errors++; }
    for (int s = 0; s < nStreams; s++) {
        float ms = -1;
        CHECK(cudaEventElapsedTime(&ms, streamStart[s], streamStop[s]));
        if (!(ms >= 0 && ms <= total + 1.0f)) { fprintf(stderr, "stream %d: %f ms of %f\n", s, ms, total); errors++; }
    }
    for (int i = 0; i < n; i++)
        if (h[i] != i + inc && errors++ < 10) fprintf(stderr, "h[%d] = %d, want %d\n", i, h[i], i + inc);

    // A consumer stream waits on the producer's event.
    const int m = 1 << 16, steps = 2000;
    int *dProduced, *dConsumed;
    CHECK(cudaMalloc(&dProduced, m * sizeof(int)));
    CHECK(cudaMalloc(&dConsumed, m * sizeof(int)));
    CHECK(cudaMemset(dProduced, 0, m * sizeof(int)));
    CHECK(cudaDeviceSynchronize());
    cudaEvent_t produced;
    CHECK(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
    produce<<<m / 256, 256, 0, streams[0]>>>(dProduced, m, steps);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(produced, streams[0]));
    CHECK(cudaStreamWaitEvent(streams[1], produced, 0));
    consume<<<m / 256, 256, 0, streams[1]>>>(dProduced, dConsumed, m);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(h, dConsumed, m * sizeof(int), cudaMemcpyDeviceToHost, streams[1]));
    CHECK(cudaStreamSynchronize(streams[1]));
    int before = errors;
    for (int i = 0; i < m; i++) {
        unsigned u = i;
        for (int s = 0; s < steps; s++) u = (u * 1103515245u + 12345u) & 0x7fffffffu;
        int v = (int)u;
        if (h[i] != (v ^ 0x1234) && errors++ < 20) fprintf(stderr, "consumed[%d] = %d, want %d\n", i, h[i], v ^ 0x1234);
    }
    printf("cudaStreamWaitEvent: %s\n", errors > before ? "wrong" : "ok");

    float ms;
    cudaError_t noTiming = cudaEventElapsedTime(&ms, produced, produced);
    printf("elapsed time of a cudaEventDisableTiming event: %s\n", cudaGetErrorName(noTiming));
    if (noTiming != cudaErrorInvalidResourceHandle) errors++;
    cudaGetLastError();

    for (int s = 0; s < nStreams; s++) {
        CHECK(cudaStreamDestroy(streams[s]));
        CHECK(cudaEventDestroy(streamStart[s]));
        CHECK(cudaEventDestroy(streamStop[s]));
    }
    CHECK(cudaEventDestroy(start)); CHECK(cudaEventDestroy(stop)); CHECK(cudaEventDestroy(produced));
    CHECK(cudaFree(d)); CHECK(cudaFree(dProduced)); CHECK(cudaFree(dConsumed));
    CHECK(cudaFreeHost(h));
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
