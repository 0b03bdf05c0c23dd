#version 460
// tests/kernels/saxpy.cu by hand: y = fma(a, x, y) over a grid-stride loop. GLSL's fma
// need not be fused (lavapipe's is not).
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
    int n; float a; F32s x; F32s y;
};

void main() {
    Params p = Params(pc.param_address);
    int n = p.n;
    float a = p.a;
    F32s x = p.x, y = p.y;
    int stride = int(gl_WorkGroupSize.x * pc.grid_x);
    for (int i = int((gl_WorkGroupID.x + pc.ctaid_base_x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x);
         i < n; i += stride) {
        y.v[i] = fma(a, x.v[i], y.v[i]);
    }
}
