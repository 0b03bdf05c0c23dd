// Models cuda-samples 0_Introduction/concurrentKernels and simpleP2P on one device:
// kernels in eight cudaStreamNonBlocking streams (checked with cudaStreamGetFlags), one
// stream created with the greatest priority from cudaDeviceGetStreamPriorityRange, each
// stream recording an event that a final stream waits for before summing every stream's
// result (cudaStreamWaitEvent), host threads launching into their own streams at the same
// time, and cudaMemcpyPeer / cudaMemcpyPeerAsync between buffers of device 0
// (cudaDeviceCanAccessPeer is only printed: a device is not its own peer). Checks every
// result against the host's arithmetic exactly.
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
#include <cuda_runtime.h>

#include "check.h"

__global__ void work(int *out, int n, int seed, int rounds) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned v = i + seed;
    for (int r = 0; r < rounds; r++) v = v * 1664525u + 1013904223u;
    out[i] = (int)(v >> 8);
}

__global__ void sumAll(int *const *parts, int count, int n, long long *total) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    long long s = 0;
    for (int p = 0; p < count; p++) s += parts[p][i];
    atomicAdd((unsigned long long *)total, (unsigned long long)s);
}

static int model(int i, int seed, int rounds) {
    unsigned v = i + seed;
    for (int r = 0; r < rounds; r++) v = v * 1664525u + 1013904223u;
    return (int)(v >> 8);
}

int main() {
    int errors = 0;
    const int nStreams = 8, n = 1 << 14, rounds = 200;
    int leastPriority = 0, greatestPriority = 0;
    CHECK(cudaDeviceGetStreamPriorityRange(&leastPriority, &greatestPriority));
    printf("stream priorities: least %d, greatest %d\n", leastPriority, greatestPriority);
    cudaStream_t streams[nStreams], final;
    cudaEvent_t done[nStreams];
    int *parts[nStreams];
    for (int s = 0; s < nStreams; s++) {
        if (s == 0)
            CHECK(cudaStreamCreateWithPriority(&streams[s], cudaStreamNonBlocking, greatestPriority));
        else
            CHECK(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));
        unsigned flags = 0;
        CHECK(cudaStreamGetFlags(streams[s], &flags));
        if (flags != cudaStreamNonBlocking) { fprintf(stderr, "stream %d flags %u\n", s, flags); errors++; }
        CHECK(cudaEventCreateWithFlags(&done[s], cudaEventDisableTiming));
        CHECK(cudaMalloc(&parts[s], n * sizeof(int)));
    }
    int priority = 0;
    CHECK(cudaStreamGetPriority(streams[0], &priority));
    if (priority != greatestPriority) { fprintf(stderr, "stream priority %d\n", priority); errors++; }
    CHECK(cudaStreamCreateWithFlags(&final, cudaStreamNonBlocking));
    int **dParts;
    long long *dTotal;
    CHECK(cudaMalloc(&dParts, sizeof parts));
    CHECK(cudaMalloc(&dTotal, sizeof(long long)));
    CHECK(cudaMemcpy(dParts, parts, sizeof parts, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dTotal, 0, sizeof(long long)));
    for (int s = 0; s < nStreams; s++) {
        work<<<n / 256, 256, 0, streams[s]>>>(parts[s], n, s * 1000, rounds);
        CHECK(cudaGetLastError());
        CHECK(cudaEventRecord(done[s], streams[s]));
        CHECK(cudaStreamWaitEvent(final, done[s], 0));
    }
    sumAll<<<n / 256, 256, 0, final>>>(dParts, nStreams, n, dTotal);
    CHECK(cudaGetLastError());
    long long total = 0;
    CHECK(cudaMemcpyAsync(&total, dTotal, sizeof total, cudaMemcpyDeviceToHost, final));
    CHECK(cudaStreamSynchronize(final));
    long long want = 0;
    for (int s = 0; s < nStreams; s++)
        for (int i = 0; i < n; i++) want += model(i, s * 1000, rounds);
    printf("sum over %d non-blocking streams: %lld\n", nStreams, total);
    if (total != want) { fprintf(stderr, "total %lld, want %lld\n", total, want); errors++; }

    // Host threads, each with its own stream.
    const int nThreads = 4;
    std::vector<std::thread> threads;
    int threadErrors[nThreads] = {0};
    for (int t = 0; t < nThreads; t++)
        threads.emplace_back([t, n, rounds, &threadErrors]() {
            cudaStream_t s;
            int *d;
            int *h = new int[n];
            if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess || cudaMalloc(&d, n * sizeof(int)) != cudaSuccess) {
                threadErrors[t] = 1;
                return;
            }
            for (int k = 0; k < 3; k++) {
                work<<<n / 128, 128, 0, s>>>(d, n, 50000 + t * 10 + k, rounds);
                if (cudaMemcpyAsync(h, d, n * sizeof(int), cudaMemcpyDeviceToHost, s) != cudaSuccess ||
                    cudaStreamSynchronize(s) != cudaSuccess) {
                    threadErrors[t]++;
                    break;
                }
                for (int i = 0; i < n; i++)
                    if (h[i] != model(i, 50000 + t * 10 + k, rounds)) {
                        threadErrors[t]++;
                        break;
                    }
            }
            cudaFree(d);
            cudaStreamDestroy(s);
            delete[] h;
        });
    for (auto &th : threads) th.join();
    for (int t = 0; t < nThreads; t++)
        if (threadErrors[t]) { fprintf(stderr, "host thread %d: %d errors\n", t, threadErrors[t]); errors++; }
    printf("%d host threads with their own streams: %s\n", nThreads, errors ? "wrong" : "ok");

    // Peer copies within device 0.
    int canAccess = -1;
    CHECK(cudaDeviceCanAccessPeer(&canAccess, 0, 0));
    printf("cudaDeviceCanAccessPeer(0, 0) = %d\n", canAccess);
    int *peerA, *peerB;
    CHECK(cudaMalloc(&peerA, n * sizeof(int)));
    CHECK(cudaMalloc(&peerB, n * sizeof(int)));
    CHECK(cudaMemcpyPeer(peerA, 0, parts[3], 0, n * sizeof(int)));
    CHECK(cudaMemcpyPeerAsync(peerB, 0, peerA, 0, n * sizeof(int), streams[1]));
    int *h = new int[n];
    CHECK(cudaMemcpyAsync(h, peerB, n * sizeof(int), cudaMemcpyDeviceToHost, streams[1]));
    CHECK(cudaStreamSynchronize(streams[1]));
    for (int i = 0; i < n; i++)
        if (h[i] != model(i, 3000, rounds) && errors++ < 10) fprintf(stderr, "peer copy [%d] = %d\n", i, h[i]);
    printf("cudaMemcpyPeer / cudaMemcpyPeerAsync: %s\n", errors ? "wrong" : "ok");

    for (int s = 0; s < nStreams; s++) {
        CHECK(cudaStreamDestroy(streams[s]));
        CHECK(cudaEventDestroy(done[s]));
        CHECK(cudaFree(parts[s]));
    }
    CHECK(cudaStreamDestroy(final));
    CHECK(cudaFree(dParts)); CHECK(cudaFree(dTotal)); CHECK(cudaFree(peerA)); CHECK(cudaFree(peerB));
    delete[] h;
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
