#version 460
// benches/cuda/scan.cu by hand: inclusive prefix sums within each 256-thread block,
// Hillis-Steele double-buffered in shared memory.
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
shared uint buf[2][256];

void main() {
    Params p = Params(pc.param_address);
    U32s src = p.src, dst = p.dst;
    int n = p.n;
    uint t = gl_LocalInvocationID.x;
    int i = int((gl_WorkGroupID.x + pc.ctaid_base_x) * 256u + t);
    uint cur = 0u;
    buf[0][t] = i < n ? src.v[i] : 0u;
    barrier();
    for (uint off = 1u; off < 256u; off *= 2u) {
        uint v = buf[cur][t];
        if (t >= off) v += buf[cur][t - off];
        buf[1u - cur][t] = v;
        cur = 1u - cur;
        barrier();
    }
    if (i < n) dst.v[i] = buf[cur][t];
}
