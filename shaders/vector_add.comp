#version 460
// benches/cuda/vector_add's kernel (tests/kernels/vector_add.cu) by hand: c = a + b.
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
    // The parameters first, outside the branch (as a hand-writer would).
    Params p = Params(pc.param_address);
    F32s a = p.a, b = p.b, c = p.c;
    int n = p.n;
    int i = int((gl_WorkGroupID.x + pc.ctaid_base_x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x);
    if (i < n) c.v[i] = a.v[i] + b.v[i];
}
