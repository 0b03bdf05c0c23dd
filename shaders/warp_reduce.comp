#version 460
// The warp sums of benches/ptx/warp_reduce.ptx written by hand for a device with
// 8-wide (or any) subgroups: subgroupAdd within each subgroup, then the first
// invocation of each 32-thread group adds its group's subgroup sums from shared
// memory. Follows ptxvk's launch ABI (vk-runtime/src/lib.rs): push constants with the
// parameter block's address and the dispatch's %ctaid base, block size from
// specialization constants 0-2, the parameter block laid out like the PTX kernel's
// (u64 in, u32 n, u64 out).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Ints { int v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer Params {
    Ints src;
    uint n;
    uint pad;
    Ints dst;
};

layout(push_constant) uniform Launch {
    uint64_t param_address;
    uint64_t const_address;
    uint ctaid_base_x, ctaid_base_y, ctaid_base_z;
    uint grid_x, grid_y, grid_z;
} pc;

shared int partial[1024];

void main() {
    // The parameters first, outside any branch (as a hand-writer would).
    Params p = Params(pc.param_address);
    Ints src = p.src, dst = p.dst;
    uint n = p.n;
    uint t = gl_LocalInvocationID.x;
    uint i = (gl_WorkGroupID.x + pc.ctaid_base_x) * gl_WorkGroupSize.x + t;
    int v = i < n ? src.v[i] : 0;
    int s = subgroupAdd(v);
    if (subgroupElect()) {
        partial[gl_SubgroupID] = s;
    }
    barrier();
    if ((t & 31u) == 0u) {
        uint per = 32u / gl_SubgroupSize;
        uint first = (t / 32u) * per;
        int sum = 0;
        for (uint k = 0u; k < per; ++k) {
            sum += partial[first + k];
        }
        dst.v[i >> 5] = sum;
    }
}
