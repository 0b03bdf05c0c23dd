#version 460
// benches/cuda/histogram_u8.cu by hand: shared-memory bins with shared atomics, then
// global atomics; 8-bit loads of the bytes (storageBuffer8BitAccess, as ptxvk uses).
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(push_constant) uniform Launch {
    uint64_t param_address;
    uint64_t const_address;
    uint ctaid_base_x, ctaid_base_y, ctaid_base_z;
    uint grid_x, grid_y, grid_z;
} pc;

layout(buffer_reference, std430, buffer_reference_align = 1) restrict buffer U8s { uint8_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) restrict buffer U32s { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) readonly restrict buffer Params {
    U8s data; U32s bins; int n;
};
shared uint h[256];

void main() {
    Params p = Params(pc.param_address);
    uint t = gl_LocalInvocationID.x;
    h[t] = 0u;
    barrier();
    int n = p.n;
    U8s data = p.data;
    U32s bins = p.bins;
    int stride = int(gl_WorkGroupSize.x * pc.grid_x);
    for (int i = int((gl_WorkGroupID.x + pc.ctaid_base_x) * gl_WorkGroupSize.x + t); i < n; i += stride) {
        atomicAdd(h[uint(data.v[i])], 1u);
    }
    barrier();
    atomicAdd(bins.v[t], h[t]);
}
