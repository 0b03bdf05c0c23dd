// Thread-block clusters of sm_90 (issue #19), as CUDA programs use them through
// cooperative groups and inline PTX. ptxvk runs every cluster as one CTA. Built by
// nvcc only, for sm_90.
//
// cluster_one   __cluster_dims__(1, 1, 1); out u32[gridDim.x * blockDim.x * 12],
//               blockDim.x <= 256; thread t of block b writes at 12 (b blockDim.x + t):
//               [0] s[(t + 1) % blockDim.x] read through cluster.map_shared_rank(s, 0)
//                   after cluster.sync(), where s[i] = 3 i + b
//               [1] cluster.block_rank()   [2] cluster.num_blocks()
//               [3] cluster.block_index().x   [4] cluster.dim_blocks().x
//               [5] %clusterid.x   [6] %nclusterid.x   [7] %is_explicit_cluster
//               [8] getctarank of &s[0]
//               [9] the value before an atom.add.relaxed.cluster of 1 to counter[b]
//                   (so the block's values are 0 .. blockDim.x - 1 in some order)
//               [10] an ld.shared::cluster of s[t] (3 t + b)
//               [11] 7 after fence.acq_rel.cluster
//               counter u32[gridDim.x], zeroed.
// cluster_implicit  no cluster shape: out[b blockDim.x + t] = %is_explicit_cluster
//               * 100 + %cluster_nctarank (so 1).
// (tests/cluster_e2e.rs also asks for clusters of two, in a copy of cluster_one's PTX
// with `.reqnctapercluster 2, 1, 1`, which ptxvk must refuse.)

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void __cluster_dims__(1, 1, 1) cluster_one(unsigned* out, unsigned* counter) {
    __shared__ unsigned s[256];
    cg::cluster_group cluster = cg::this_cluster();
    unsigned t = threadIdx.x, b = blockIdx.x;
    s[t] = 3 * t + b;
    cluster.sync();
    unsigned* peer = cluster.map_shared_rank(s, 0);
    unsigned* o = out + 12 * (b * blockDim.x + t);
    o[0] = peer[(t + 1) % blockDim.x];
    o[1] = cluster.block_rank();
    o[2] = cluster.num_blocks();
    o[3] = cluster.block_index().x;
    o[4] = cluster.dim_blocks().x;
    unsigned v;
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(v));
    o[5] = v;
    asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(v));
    o[6] = v;
    asm volatile("{\n\t.reg .pred p;\n\tmov.pred p, %%is_explicit_cluster;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(v));
    o[7] = v;
    asm volatile("getctarank.shared::cluster.u32 %0, %1;"
                 : "=r"(v)
                 : "r"((unsigned)__cvta_generic_to_shared(&s[0])));
    o[8] = v;
    asm volatile("atom.add.relaxed.cluster.global.u32 %0, [%1], 1;"
                 : "=r"(v)
                 : "l"(&counter[b])
                 : "memory");
    o[9] = v;
    asm volatile("ld.shared::cluster.u32 %0, [%1];"
                 : "=r"(v)
                 : "r"((unsigned)__cvta_generic_to_shared(&s[t])));
    o[10] = v;
    asm volatile("fence.acq_rel.cluster;" ::: "memory");
    o[11] = 7;
    cluster.sync();
}

extern "C" __global__ void cluster_implicit(unsigned* out) {
    unsigned explicit_cluster, ranks;
    asm volatile("{\n\t.reg .pred p;\n\tmov.pred p, %%is_explicit_cluster;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(explicit_cluster));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(ranks));
    out[blockIdx.x * blockDim.x + threadIdx.x] = explicit_cluster * 100 + ranks;
}
