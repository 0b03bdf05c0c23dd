/*
 * A program as nvcc's host code is, written by hand so that it runs on any version of
 * NVIDIA's CUDA runtime (libcudart.so.11.0, .12, .13, loaded with dlopen): it
 * registers a fatbin (argv[1], `scale.ptx75.fatbin` of scripts/gen-fatbins: compute_75
 * PTX of tests/data/scale.cu) and its kernel `scale` the way nvcc's generated code
 * does, launches it with cudaLaunchKernel and checks x[i] = 3 * i against the CPU.
 * Prints the runtime's version and PASS, or FAIL with the call that failed.
 *
 *     registered_fatbin FATBIN LIBCUDART
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct { unsigned x, y, z; } dim3;
/* nvcc's fatbin wrapper (the `.nvFatBinSegment` record). */
typedef struct { int magic; int version; const void *data; void *unused; } wrapper_t;

static void scale_stub(void) {} /* the kernel's host-side handle */

#define N 1000

static void *lookup(void *lib, const char *name) {
    void *f = dlsym(lib, name);
    if (!f) { printf("FAIL: %s is missing: %s\n", name, dlerror()); exit(1); }
    return f;
}

#define CHECK(call) do { int e_ = (call); if (e_) { printf("FAIL: %s = %d\n", #call, e_); return 1; } } while (0)

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: %s FATBIN LIBCUDART\n", argv[0]); return 2; }
    FILE *f = fopen(argv[1], "rb");
    if (!f) { printf("FAIL: cannot open %s\n", argv[1]); return 1; }
    static unsigned long long image[1 << 16]; /* 8-byte aligned, as nvcc places it */
    size_t bytes = fread(image, 1, sizeof image, f);
    fclose(f);
    if (bytes == 0 || bytes == sizeof image) { printf("FAIL: %s: %zu bytes\n", argv[1], bytes); return 1; }
    void *lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!lib) { printf("FAIL: dlopen: %s\n", dlerror()); return 1; }

    void **(*register_fatbin)(void *) = lookup(lib, "__cudaRegisterFatBinary");
    void (*register_end)(void **) = dlsym(lib, "__cudaRegisterFatBinaryEnd"); /* 10.1+ */
    void (*register_function)(void **, const void *, char *, const char *, int, void *,
                              void *, void *, void *, int *) = lookup(lib, "__cudaRegisterFunction");
    void (*unregister)(void **) = lookup(lib, "__cudaUnregisterFatBinary");
    int (*runtime_version)(int *) = lookup(lib, "cudaRuntimeGetVersion");
    int (*cuda_malloc)(void **, size_t) = lookup(lib, "cudaMalloc");
    int (*cuda_free)(void *) = lookup(lib, "cudaFree");
    int (*cuda_memcpy)(void *, const void *, size_t, int) = lookup(lib, "cudaMemcpy");
    int (*launch)(const void *, dim3, dim3, void **, size_t, void *) = lookup(lib, "cudaLaunchKernel");
    int (*synchronize)(void) = lookup(lib, "cudaDeviceSynchronize");

    static wrapper_t wrapper;
    wrapper.magic = 0x466243b1;
    wrapper.version = 1;
    wrapper.data = image;
    void **handle = register_fatbin(&wrapper);
    register_function(handle, (const void *)scale_stub, "scale", "scale", -1, 0, 0, 0, 0, 0);
    if (register_end) register_end(handle);

    int version = 0;
    CHECK(runtime_version(&version));
    printf("runtime %d\n", version);
    float host[N];
    for (int i = 0; i < N; i++) host[i] = (float)i;
    void *x = 0;
    CHECK(cuda_malloc(&x, sizeof host));
    CHECK(cuda_memcpy(x, host, sizeof host, 1 /* host to device */));
    float a = 3.0f;
    int n = N;
    void *args[] = {&x, &a, &n};
    dim3 grid = {(N + 127) / 128, 1, 1}, block = {128, 1, 1};
    CHECK(launch((const void *)scale_stub, grid, block, args, 0, 0));
    CHECK(synchronize());
    CHECK(cuda_memcpy(host, x, sizeof host, 2 /* device to host */));
    for (int i = 0; i < N; i++) {
        if (host[i] != 3.0f * (float)i) { printf("FAIL: x[%d] = %g, want %g\n", i, host[i], 3.0 * i); return 1; }
    }
    CHECK(cuda_free(x));
    unregister(handle);
    printf("PASS\n");
    return 0;
}
