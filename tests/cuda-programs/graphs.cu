// Models cuda-samples 3_CUDA_Features/simpleCudaGraphs: the same work (copy in, memset,
// a two-stage reduction, copy out, a host node) built twice: explicitly, node by node
// (cudaGraphAddMemcpyNode1D, cudaGraphAddMemsetNode, cudaGraphAddKernelNode,
// cudaGraphAddHostNode with dependencies), and by stream capture across two streams
// forked and joined with events (cudaStreamBeginCapture / cudaStreamEndCapture). Each
// graph is instantiated, launched several times, cloned, and updated in place
// (cudaGraphExecKernelNodeSetParams with a new scale). Checks each launch's result
// against the host's sum exactly (integers).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "check.h"

#define THREADS 256

__global__ void reduceBlocks(const int *in, int *partial, int n, int scale) {
    __shared__ int s[THREADS];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] * scale : 0;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

__global__ void reduceFinal(const int *partial, int count, int *result) {
    __shared__ int s[THREADS];
    int sum = 0;
    for (int i = threadIdx.x; i < count; i += blockDim.x) sum += partial[i];
    s[threadIdx.x] = sum;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) *result += s[0];
}

struct HostCheck {
    const int *result;
    int seen;
    int calls;
};

static void CUDART_CB recordResult(void *data) {
    HostCheck *c = (HostCheck *)data;
    c->seen = *c->result;
    c->calls++;
}

static int errors = 0;

static void expect(const char *what, int got, long long want) {
    printf("%-40s %d\n", what, got);
    if (got != want) {
        fprintf(stderr, "%s: %d, want %lld\n", what, got, want);
        errors++;
    }
}

int main() {
    const int n = 1 << 16, blocks = n / THREADS;
    int *h, *hResult;
    CHECK(cudaMallocHost(&h, n * sizeof(int)));
    CHECK(cudaMallocHost(&hResult, sizeof(int)));
    long long sum = 0;
    for (int i = 0; i < n; i++) {
        h[i] = (i * 37) % 101 - 50;
        sum += h[i];
    }
    int *dIn, *dPartial, *dResult;
    CHECK(cudaMalloc(&dIn, n * sizeof(int)));
    CHECK(cudaMalloc(&dPartial, blocks * sizeof(int)));
    CHECK(cudaMalloc(&dResult, sizeof(int)));
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    HostCheck check = {hResult, 0, 0};

    // Explicit graph.
    cudaGraph_t graph;
    CHECK(cudaGraphCreate(&graph, 0));
    cudaGraphNode_t copyIn, memset, stage1, stage2, copyOut, hostNode;
    CHECK(cudaGraphAddMemcpyNode1D(&copyIn, graph, nullptr, 0, dIn, h, n * sizeof(int), cudaMemcpyHostToDevice));
    cudaMemsetParams memsetParams = {};
    memsetParams.dst = dResult;
    memsetParams.value = 0;
    memsetParams.elementSize = sizeof(int);
    memsetParams.width = 1;
    memsetParams.height = 1;
    CHECK(cudaGraphAddMemsetNode(&memset, graph, nullptr, 0, &memsetParams));
    int scale = 1, count = blocks, length = n;
    void *stage1Args[] = {&dIn, &dPartial, &length, &scale};
    cudaKernelNodeParams k1 = {};
    k1.func = (void *)reduceBlocks;
    k1.gridDim = dim3(blocks);
    k1.blockDim = dim3(THREADS);
    k1.kernelParams = stage1Args;
    CHECK(cudaGraphAddKernelNode(&stage1, graph, &copyIn, 1, &k1));
    void *stage2Args[] = {&dPartial, &count, &dResult};
    cudaKernelNodeParams k2 = {};
    k2.func = (void *)reduceFinal;
    k2.gridDim = dim3(1);
    k2.blockDim = dim3(THREADS);
    k2.kernelParams = stage2Args;
    cudaGraphNode_t stage2Deps[] = {stage1, memset};
    CHECK(cudaGraphAddKernelNode(&stage2, graph, stage2Deps, 2, &k2));
    CHECK(cudaGraphAddMemcpyNode1D(&copyOut, graph, &stage2, 1, hResult, dResult, sizeof(int), cudaMemcpyDeviceToHost));
    cudaHostNodeParams hostParams = {recordResult, &check};
    CHECK(cudaGraphAddHostNode(&hostNode, graph, &copyOut, 1, &hostParams));
    size_t nodes = 0;
    CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
    if (nodes != 6) { fprintf(stderr, "the graph has %zu nodes, want 6\n", nodes); errors++; }

    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int launch = 0; launch < 3; launch++) {
        CHECK(cudaGraphLaunch(exec, stream));
        CHECK(cudaStreamSynchronize(stream));
        expect("explicit graph", check.seen, sum);
    }
    // A new scale for the first kernel, in the executable graph only.
    scale = 3;
    CHECK(cudaGraphExecKernelNodeSetParams(exec, stage1, &k1));
    CHECK(cudaGraphLaunch(exec, stream));
    CHECK(cudaStreamSynchronize(stream));
    expect("explicit graph, kernel scale 3", check.seen, 3 * sum);
    // The clone keeps the original parameters (scale 1 was copied at creation).
    cudaGraph_t clone;
    cudaGraphExec_t cloneExec;
    CHECK(cudaGraphClone(&clone, graph));
    CHECK(cudaGraphInstantiate(&cloneExec, clone, 0));
    CHECK(cudaGraphLaunch(cloneExec, stream));
    CHECK(cudaStreamSynchronize(stream));
    expect("cloned graph", check.seen, sum);

    // Stream capture: the same work, the memset on a second stream forked by an event.
    cudaStream_t side;
    CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    cudaEvent_t fork, join;
    CHECK(cudaEventCreate(&fork));
    CHECK(cudaEventCreate(&join));
    cudaGraph_t captured;
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    cudaStreamCaptureStatus status;
    CHECK(cudaStreamIsCapturing(stream, &status));
    if (status != cudaStreamCaptureStatusActive) { fprintf(stderr, "capture status %d\n", (int)status); errors++; }
    CHECK(cudaEventRecord(fork, stream));
    CHECK(cudaStreamWaitEvent(side, fork, 0));
    CHECK(cudaMemsetAsync(dResult, 0, sizeof(int), side));
    CHECK(cudaEventRecord(join, side));
    CHECK(cudaMemcpyAsync(dIn, h, n * sizeof(int), cudaMemcpyHostToDevice, stream));
    reduceBlocks<<<blocks, THREADS, 0, stream>>>(dIn, dPartial, n, 2);
    CHECK(cudaStreamWaitEvent(stream, join, 0));
    reduceFinal<<<1, THREADS, 0, stream>>>(dPartial, blocks, dResult);
    CHECK(cudaMemcpyAsync(hResult, dResult, sizeof(int), cudaMemcpyDeviceToHost, stream));
    CHECK(cudaLaunchHostFunc(stream, recordResult, &check));
    CHECK(cudaStreamEndCapture(stream, &captured));
    CHECK(cudaGraphGetNodes(captured, nullptr, &nodes));
    printf("captured graph: %zu nodes\n", nodes);
    cudaGraphExec_t capturedExec;
    CHECK(cudaGraphInstantiate(&capturedExec, captured, 0));
    for (int launch = 0; launch < 3; launch++) {
        CHECK(cudaGraphLaunch(capturedExec, stream));
        CHECK(cudaStreamSynchronize(stream));
        expect("captured graph (scale 2)", check.seen, 2 * sum);
    }
    if (check.calls != 8) { fprintf(stderr, "host node ran %d times, want 8\n", check.calls); errors++; }

    CHECK(cudaGraphExecDestroy(exec)); CHECK(cudaGraphExecDestroy(cloneExec)); CHECK(cudaGraphExecDestroy(capturedExec));
    CHECK(cudaGraphDestroy(graph)); CHECK(cudaGraphDestroy(clone)); CHECK(cudaGraphDestroy(captured));
    CHECK(cudaEventDestroy(fork)); CHECK(cudaEventDestroy(join));
    CHECK(cudaStreamDestroy(stream)); CHECK(cudaStreamDestroy(side));
    CHECK(cudaFree(dIn)); CHECK(cudaFree(dPartial)); CHECK(cudaFree(dResult));
    CHECK(cudaFreeHost(h)); CHECK(cudaFreeHost(hResult));
    if (errors) {
        printf("FAIL: %d mismatches\n", errors);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
