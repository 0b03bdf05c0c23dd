#version 460
// benches/cuda/matmul_tiled.cu by hand: 16x16 tiles of A and B in shared memory.
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
    F32s a; F32s b; F32s c; int n;
};
shared float As[16][16];
shared float Bs[16][16];

void main() {
    Params p = Params(pc.param_address);
    int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y);
    int row = int(gl_WorkGroupID.y + pc.ctaid_base_y) * 16 + ty;
    int col = int(gl_WorkGroupID.x + pc.ctaid_base_x) * 16 + tx;
    int n = p.n;
    F32s a = p.a, b = p.b, c = p.c;
    float acc = 0.0;
    for (int t = 0; t < n; t += 16) {
        As[ty][tx] = a.v[row * n + t + tx];
        Bs[ty][tx] = b.v[(t + ty) * n + col];
        barrier();
        for (int k = 0; k < 16; ++k) acc = fma(As[ty][k], Bs[k][tx], acc);
        barrier();
    }
    c.v[row * n + col] = acc;
}
