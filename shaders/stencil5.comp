#version 460
// benches/cuda/stencil5.cu by hand: out = 4c - (l + r + u + d) inside, border copied.
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
    F32s src; F32s dst; int w; int h;
};

void main() {
    Params p = Params(pc.param_address);
    int x = int((gl_WorkGroupID.x + pc.ctaid_base_x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x);
    int y = int((gl_WorkGroupID.y + pc.ctaid_base_y) * gl_WorkGroupSize.y + gl_LocalInvocationID.y);
    int w = p.w, h = p.h;
    F32s src = p.src, dst = p.dst;
    if (x >= w || y >= h) {
        return;
    }
    int i = y * w + x;
    if (x == 0 || y == 0 || x == w - 1 || y == h - 1) {
        dst.v[i] = src.v[i];
    } else {
        dst.v[i] = 4.0 * src.v[i] - (src.v[i - 1] + src.v[i + 1] + src.v[i - w] + src.v[i + w]);
    }
}
