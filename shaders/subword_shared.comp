#version 460
// benches/cuda/subword_shared.cu by hand: the byte transposition with 8-bit shared
// stores where the device has them would need an extension; a hand-writer uses a
// uint8_t shared array (GL_EXT_shader_explicit_arithmetic_types_int8, shaderInt8).
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(push_constant) uniform Launch {
    uint64_t param_address;
    uint64_t const_address;
    uint ctaid_base_x, ctaid_base_y, ctaid_base_z;
    uint grid_x, grid_y, grid_z;
} pc;

layout(buffer_reference, std430, buffer_reference_align = 4) restrict buffer U32s { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) readonly restrict buffer Params {
    U32s src; U32s dst; int n;
};
shared uint8_t s[1024];

void main() {
    Params p = Params(pc.param_address);
    U32s src = p.src, dst = p.dst;
    int n = p.n;
    uint t = gl_LocalInvocationID.x;
    int i = int((gl_WorkGroupID.x + pc.ctaid_base_x) * 256u + t);
    uint v = i < n ? src.v[i] : 0u;
    for (uint j = 0u; j < 4u; ++j) s[j * 256u + t] = uint8_t(v >> (8u * j));
    barrier();
    uint r = uint(s[4u * t]) | (uint(s[4u * t + 1u]) << 8) | (uint(s[4u * t + 2u]) << 16)
        | (uint(s[4u * t + 3u]) << 24);
    if (i < n) dst.v[i] = r;
}
