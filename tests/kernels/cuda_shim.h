/*
 * cuda_shim.h - the minimum of the CUDA device environment needed by the
 * kernels in this directory, for clang in `-nocudainc -nocudalib` mode.
 *
 * nvcc and NVRTC define `__CUDACC__` and provide all of this themselves, so
 * every definition here is guarded by `#ifndef __CUDACC__` (clang only defines
 * `__CUDACC__` from its CUDA runtime wrapper header, which -nocudainc skips).
 * The kernels additionally only include this header when `__CUDACC__` is
 * undefined, so nvcc/NVRTC never even open it.
 *
 * What it provides:
 *   __global__ __device__ __shared__ __host__   (as clang CUDA attributes)
 *   uint3 / dim3, threadIdx blockIdx blockDim gridDim
 *       (each read goes through the __nvvm_read_ptx_sreg_* builtins, like
 *        clang's own __clang_cuda_builtin_vars.h; unused components are
 *        removed by the optimiser since the reads are side-effect free)
 *   __syncthreads()    is already a clang NVPTX builtin (bar.sync 0)
 *   __umul64hi(a, b)   high 64 bits of the 128-bit product, via __int128
 *                      (libdevice's __nv_umul64hi is unavailable with
 *                      -nocudalib; LLVM lowers this to mul.hi.u64)
 */
#ifndef PTXVK_CUDA_SHIM_H
#define PTXVK_CUDA_SHIM_H

#ifndef __CUDACC__

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __forceinline__ __inline__ __attribute__((always_inline))

struct uint3 {
    unsigned int x, y, z;
};
typedef uint3 dim3;

static __device__ __forceinline__ uint3 __ptxvk_threadIdx(void) {
    uint3 v = {(unsigned int)__nvvm_read_ptx_sreg_tid_x(),
               (unsigned int)__nvvm_read_ptx_sreg_tid_y(),
               (unsigned int)__nvvm_read_ptx_sreg_tid_z()};
    return v;
}
static __device__ __forceinline__ uint3 __ptxvk_blockIdx(void) {
    uint3 v = {(unsigned int)__nvvm_read_ptx_sreg_ctaid_x(),
               (unsigned int)__nvvm_read_ptx_sreg_ctaid_y(),
               (unsigned int)__nvvm_read_ptx_sreg_ctaid_z()};
    return v;
}
static __device__ __forceinline__ dim3 __ptxvk_blockDim(void) {
    dim3 v = {(unsigned int)__nvvm_read_ptx_sreg_ntid_x(),
              (unsigned int)__nvvm_read_ptx_sreg_ntid_y(),
              (unsigned int)__nvvm_read_ptx_sreg_ntid_z()};
    return v;
}
static __device__ __forceinline__ dim3 __ptxvk_gridDim(void) {
    dim3 v = {(unsigned int)__nvvm_read_ptx_sreg_nctaid_x(),
              (unsigned int)__nvvm_read_ptx_sreg_nctaid_y(),
              (unsigned int)__nvvm_read_ptx_sreg_nctaid_z()};
    return v;
}

#define threadIdx (__ptxvk_threadIdx())
#define blockIdx (__ptxvk_blockIdx())
#define blockDim (__ptxvk_blockDim())
#define gridDim (__ptxvk_gridDim())

static __device__ __forceinline__ unsigned long long
__umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * (unsigned __int128)b) >> 64);
}

#endif /* !__CUDACC__ */

#endif /* PTXVK_CUDA_SHIM_H */
