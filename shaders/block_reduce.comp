#version 460
// tests/kernels/block_reduce.cu by hand: each 256-thread block sums its 256 inputs in a
// shared-memory tree (stride halving, as the CUDA kernel does); thread 0 writes it.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(push_constant) uniform Launch {
    uint64_t param_address;
    uint64_t const_address;
    uint ctaid_base_x, ctaid_base_y, ctaid_base_z;
    uint grid_x, grid_y, grid_z;
} pc;

layout(buffer_reference, std430, buffer_reference_align = 4) restrict buffer F32s { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) readonly restrict buffer Params {
    F32s src; F32s dst; int n;
};
shared float s[256];

void main() {
    Params p = Params(pc.param_address);
    F32s src = p.src, dst = p.dst;
    int n = p.n;
    uint t = gl_LocalInvocationID.x;
    uint b = gl_WorkGroupID.x + pc.ctaid_base_x;
    int i = int(b * 256u + t);
    s[t] = i < n ? src.v[i] : 0.0;
    barrier();
    for (uint off = 128u; off > 0u; off >>= 1) {
        if (t < off) s[t] += s[t + off];
        barrier();
    }
    if (t == 0u) dst.v[b] = s[0];
}
