#version 460
// benches/cuda/normalize.cu by hand: Vulkan's sqrt and division (not correctly rounded).
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
    F32s x; F32s y; F32s z; F32s ox; F32s oy; F32s oz; int n;
};

void main() {
    Params p = Params(pc.param_address);
    F32s xs = p.x, ys = p.y, zs = p.z, ox = p.ox, oy = p.oy, oz = p.oz;
    int n = p.n;
    int i = int((gl_WorkGroupID.x + pc.ctaid_base_x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x);
    if (i < n) {
        float x = xs.v[i], y = ys.v[i], z = zs.v[i];
        float len = sqrt(fma(z, z, fma(y, y, x * x)));
        ox.v[i] = x / len;
        oy.v[i] = y / len;
        oz.v[i] = z / len;
    }
}
