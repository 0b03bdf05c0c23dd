// Models cuda-samples 1_Utilities/deviceQuery: cudaGetDeviceCount, cudaDriverGetVersion
// and cudaRuntimeGetVersion, cudaGetDeviceProperties printed as the sample prints it,
// and each property checked against cudaDeviceGetAttribute for the same quantity;
// cudaSetDevice/cudaGetDevice, cudaMemGetInfo and cudaDeviceGetPCIBusId. Checks the
// properties agree with the attributes and are within the limits CUDA documents.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#include "check.h"

static int errors = 0;

static void same(const char *what, long long prop, cudaDeviceAttr attr, int dev) {
    int value = 0;
    CHECK(cudaDeviceGetAttribute(&value, attr, dev));
    if (value != prop) {
        fprintf(stderr, "%s: property %lld, attribute %d\n", what, prop, value);
        errors++;
    }
}

int main() {
    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    if (count < 1) { printf("FAIL: no CUDA device\n"); return 1; }
    int driver = 0, runtime = 0;
    CHECK(cudaDriverGetVersion(&driver));
    CHECK(cudaRuntimeGetVersion(&runtime));
    printf("Detected %d CUDA Capable device(s)\n", count);
    printf("  CUDA Driver Version / Runtime Version          %d.%d / %d.%d\n", driver / 1000, (driver % 100) / 10,
           runtime / 1000, (runtime % 100) / 10);
    if (driver / 1000 < runtime / 1000) { fprintf(stderr, "driver %d older than runtime %d\n", driver, runtime); errors++; }
    for (int dev = 0; dev < count; dev++) {
        CHECK(cudaSetDevice(dev));
        int current = -1;
        CHECK(cudaGetDevice(&current));
        if (current != dev) { fprintf(stderr, "cudaGetDevice %d after cudaSetDevice(%d)\n", current, dev); errors++; }
        cudaDeviceProp p;
        CHECK(cudaGetDeviceProperties(&p, dev));
        printf("\nDevice %d: \"%s\"\n", dev, p.name);
        printf("  CUDA Capability Major/Minor version number:    %d.%d\n", p.major, p.minor);
        printf("  Total amount of global memory:                 %.0f MBytes (%zu bytes)\n", p.totalGlobalMem / 1048576.0,
               p.totalGlobalMem);
        printf("  Multiprocessors:                               %d\n", p.multiProcessorCount);
        printf("  Memory Bus Width:                              %d-bit\n", p.memoryBusWidth);
        printf("  L2 Cache Size:                                 %d bytes\n", p.l2CacheSize);
        printf("  Total amount of constant memory:               %zu bytes\n", p.totalConstMem);
        printf("  Total amount of shared memory per block:       %zu bytes\n", p.sharedMemPerBlock);
        printf("  Total shared memory per multiprocessor:        %zu bytes\n", p.sharedMemPerMultiprocessor);
        printf("  Total number of registers available per block: %d\n", p.regsPerBlock);
        printf("  Warp size:                                     %d\n", p.warpSize);
        printf("  Maximum number of threads per multiprocessor:  %d\n", p.maxThreadsPerMultiProcessor);
        printf("  Maximum number of threads per block:           %d\n", p.maxThreadsPerBlock);
        printf("  Max dimension size of a thread block (x,y,z): (%d, %d, %d)\n", p.maxThreadsDim[0], p.maxThreadsDim[1],
               p.maxThreadsDim[2]);
        printf("  Max dimension size of a grid size    (x,y,z): (%d, %d, %d)\n", p.maxGridSize[0], p.maxGridSize[1],
               p.maxGridSize[2]);
        printf("  Maximum memory pitch:                          %zu bytes\n", p.memPitch);
        printf("  Texture alignment:                             %zu bytes\n", p.textureAlignment);
        printf("  Concurrent copy and kernel execution:          %d copy engine(s)\n", p.asyncEngineCount);
        printf("  Integrated GPU sharing Host Memory:            %s\n", p.integrated ? "Yes" : "No");
        printf("  Support host page-locked memory mapping:       %s\n", p.canMapHostMemory ? "Yes" : "No");
        printf("  Device supports Unified Addressing (UVA):      %s\n", p.unifiedAddressing ? "Yes" : "No");
        printf("  Device supports Managed Memory:                %s\n", p.managedMemory ? "Yes" : "No");
        printf("  Device supports Compute Preemption:            %s\n", p.computePreemptionSupported ? "Yes" : "No");
        printf("  Supports Cooperative Kernel Launch:            %s\n", p.cooperativeLaunch ? "Yes" : "No");
        printf("  Device PCI Domain ID / Bus ID / location ID:   %d / %d / %d\n", p.pciDomainID, p.pciBusID, p.pciDeviceID);

        same("major", p.major, cudaDevAttrComputeCapabilityMajor, dev);
        same("minor", p.minor, cudaDevAttrComputeCapabilityMinor, dev);
        same("multiProcessorCount", p.multiProcessorCount, cudaDevAttrMultiProcessorCount, dev);
        same("warpSize", p.warpSize, cudaDevAttrWarpSize, dev);
        same("maxThreadsPerBlock", p.maxThreadsPerBlock, cudaDevAttrMaxThreadsPerBlock, dev);
        same("maxThreadsDim[0]", p.maxThreadsDim[0], cudaDevAttrMaxBlockDimX, dev);
        same("maxThreadsDim[1]", p.maxThreadsDim[1], cudaDevAttrMaxBlockDimY, dev);
        same("maxThreadsDim[2]", p.maxThreadsDim[2], cudaDevAttrMaxBlockDimZ, dev);
        same("maxGridSize[0]", p.maxGridSize[0], cudaDevAttrMaxGridDimX, dev);
        same("maxGridSize[1]", p.maxGridSize[1], cudaDevAttrMaxGridDimY, dev);
        same("maxGridSize[2]", p.maxGridSize[2], cudaDevAttrMaxGridDimZ, dev);
        same("sharedMemPerBlock", p.sharedMemPerBlock, cudaDevAttrMaxSharedMemoryPerBlock, dev);
        same("totalConstMem", p.totalConstMem, cudaDevAttrTotalConstantMemory, dev);
        same("regsPerBlock", p.regsPerBlock, cudaDevAttrMaxRegistersPerBlock, dev);
        same("maxThreadsPerMultiProcessor", p.maxThreadsPerMultiProcessor, cudaDevAttrMaxThreadsPerMultiProcessor, dev);
        same("l2CacheSize", p.l2CacheSize, cudaDevAttrL2CacheSize, dev);
        same("managedMemory", p.managedMemory, cudaDevAttrManagedMemory, dev);
        same("canMapHostMemory", p.canMapHostMemory, cudaDevAttrCanMapHostMemory, dev);
        same("unifiedAddressing", p.unifiedAddressing, cudaDevAttrUnifiedAddressing, dev);
        same("cooperativeLaunch", p.cooperativeLaunch, cudaDevAttrCooperativeLaunch, dev);
        same("pciBusID", p.pciBusID, cudaDevAttrPciBusId, dev);
        // Limits CUDA documents for every device it supports.
        if (p.warpSize != 32 || p.maxThreadsPerBlock < 512 || p.maxThreadsPerBlock > 1024 || p.maxThreadsDim[2] < 1 ||
            p.maxGridSize[0] < 65535 || p.maxGridSize[1] < 65535 || p.sharedMemPerBlock < 16384 ||
            p.totalGlobalMem == 0 || p.multiProcessorCount < 1 || strlen(p.name) == 0) {
            fprintf(stderr, "a property is outside CUDA's documented limits\n");
            errors++;
        }
        size_t freeMem = 0, totalMem = 0;
        CHECK(cudaMemGetInfo(&freeMem, &totalMem));
        printf("  cudaMemGetInfo:                                %zu free of %zu bytes\n", freeMem, totalMem);
        if (freeMem > totalMem || totalMem == 0) { fprintf(stderr, "cudaMemGetInfo %zu of %zu\n", freeMem, totalMem); errors++; }
        char bus[32] = "";
        CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, dev));
        printf("  PCI bus id:                                    %s\n", bus);
        if (strlen(bus) == 0) errors++;
    }
    if (errors) {
        printf("FAIL: %d inconsistencies\n", errors);
        return 1;
    }
    printf("\ndeviceQuery, CUDA Driver = CUDART, NumDevs = %d\nPASS\n", count);
    return 0;
}
