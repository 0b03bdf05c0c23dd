#version 460
// benches/cuda/matmul_naive.cu by hand: one invocation per element of C.
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

void main() {
    Params p = Params(pc.param_address);
    int col = int((gl_WorkGroupID.x + pc.ctaid_base_x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x);
    int row = int((gl_WorkGroupID.y + pc.ctaid_base_y) * gl_WorkGroupSize.y + gl_LocalInvocationID.y);
    int n = p.n;
    F32s a = p.a, b = p.b, c = p.c;
    if (row < n && col < n) {
        float acc = 0.0;
        for (int k = 0; k < n; ++k) acc = fma(a.v[row * n + k], b.v[k * n + col], acc);
        c.v[row * n + col] = acc;
    }
}
