// What every program of tests/cuda-programs shares: CHECK(call) stops the program with
// a FAIL line naming the call, the file and line, and CUDA's error name and number,
// when a CUDA runtime call does not return cudaSuccess.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                                      \
    do {                                                                                 \
        cudaError_t err_ = (call);                                                       \
        if (err_ != cudaSuccess) {                                                       \
            fprintf(stderr, "FAIL %s:%d: %s: %s (%s = %d)\n", __FILE__, __LINE__, #call, \
                    cudaGetErrorString(err_), cudaGetErrorName(err_), (int)err_);        \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)
