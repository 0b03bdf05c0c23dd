#version 460
// benches/cuda/f64_fma_div.cu by hand: Vulkan's f64 fma (not necessarily fused) and
// division (not correctly rounded).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(push_constant) uniform Launch {
    uint64_t param_address;
    uint64_t const_address;
    uint ctaid_base_x, ctaid_base_y, ctaid_base_z;
    uint grid_x, grid_y, grid_z;
} pc;

layout(buffer_reference, std430, buffer_reference_align = 8) restrict buffer F64s { double v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) readonly restrict buffer Params {
    F64s a; F64s b; F64s c; F64s d; F64s y; int n;
};

void main() {
    Params p = Params(pc.param_address);
    F64s a = p.a, b = p.b, c = p.c, d = p.d, y = p.y;
    int n = p.n;
    int i = int((gl_WorkGroupID.x + pc.ctaid_base_x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x);
    if (i < n) y.v[i] = fma(a.v[i], b.v[i], c.v[i]) / d.v[i];
}
