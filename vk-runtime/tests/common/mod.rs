//! Shared helpers of the runtime's GPU tests: opening the device (or skipping loudly),
//! small SPIR-V kernels built with rspirv against the launch ABI, and `spirv-val`.
#![allow(dead_code)] // Each test binary uses a different subset.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use ptxvk_vk::{Device, DeviceSelector, Features};
use rspirv::binary::Assemble;
use rspirv::dr::{Builder, Operand};
use rspirv::spirv::{
    AddressingModel, BuiltIn, Capability, Decoration, ExecutionMode, ExecutionModel,
    FunctionControl, LoopControl, MemoryAccess, MemoryModel, StorageClass, Word,
};

/// The default device, or `None` after printing a SKIPPED line when the machine has no
/// usable Vulkan device. Any other failure fails the test.
pub fn open_or_skip() -> Option<Device> {
    match Device::open(&DeviceSelector::Default) {
        Ok(device) => Some(device),
        Err(e) if e.is_no_device() => {
            eprintln!("SKIPPED: no Vulkan device: {e}");
            None
        }
        Err(e) => panic!("opening the default Vulkan device failed: {e}"),
    }
}

/// Features every test kernel needs (`u64` addresses).
pub const NEEDS: Features = Features {
    int64: true,
    int8: false,
    int16: false,
    float16: false,
    float64: false,
    storage_buffer_8bit: false,
    storage_buffer_16bit: false,
    vulkan_memory_model: false,
    int64_atomics: false,
    shared_int64_atomics: false,
    float32_atomic_add: false,
    shader_clock: false,
    device_clock: false,
    denorm_preserve_f32: false,
    denorm_preserve_f64: false,
    subgroup_size_control: false,
    signed_zero_preserve_f32: false,
    signed_zero_preserve_f64: false,
    zero_initialize_workgroup_memory: false,
};

/// Runs `spirv-val --target-env vulkan1.3` on `words`; panics with its output on failure.
pub fn spirv_val(words: &[u32]) {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let path: PathBuf = std::env::temp_dir().join(format!(
        "ptxvk-vk-test-{}-{}.spv",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(&path, bytes).expect("write temporary SPIR-V file");
    let output = Command::new("spirv-val").arg("--target-env").arg("vulkan1.3").arg(&path).output();
    let _ = std::fs::remove_file(&path);
    let output = output.expect("spirv-val must be installed (SPIRV-Tools) to run these tests");
    assert!(
        output.status.success(),
        "spirv-val rejected a test kernel:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Ids shared by every kernel: types, the push-constant block, builtins, spec constants.
struct Abi {
    u32_t: Word,
    u64_t: Word,
    bool_t: Word,
    pc: Word,
    workgroup_id: Word,
    local_id: Word,
    block: [Word; 3],
    shared_words: Word,
    psb_u32: Word,
    psb_u64: Word,
    /// Label of `main`'s first block.
    entry_label: Word,
}

/// Push-constant struct members: 0 param_address, 1 const_address, 2..5 ctaid_base x y z,
/// 5..8 grid x y z. Scalar members at offsets 0, 8, 16, ..., 36 (valid standard layout).
const PC_OFFSETS: [u32; 8] = [0, 8, 16, 20, 24, 28, 32, 36];

/// Starts a module: header, types, ABI interface, and `main` with its first block.
fn begin(b: &mut Builder) -> Abi {
    b.set_version(1, 6);
    b.capability(Capability::Shader);
    b.capability(Capability::Int64);
    b.capability(Capability::PhysicalStorageBufferAddresses);
    b.memory_model(AddressingModel::PhysicalStorageBuffer64, MemoryModel::GLSL450);

    let void = b.type_void();
    let bool_t = b.type_bool();
    let u32_t = b.type_int(32, 0);
    let u64_t = b.type_int(64, 0);
    let v3 = b.type_vector(u32_t, 3);

    let pc_struct = b.type_struct([u64_t, u64_t, u32_t, u32_t, u32_t, u32_t, u32_t, u32_t]);
    b.decorate(pc_struct, Decoration::Block, []);
    for (member, offset) in PC_OFFSETS.iter().enumerate() {
        b.member_decorate(
            pc_struct,
            member as u32,
            Decoration::Offset,
            [Operand::LiteralBit32(*offset)],
        );
    }
    let pc_ptr = b.type_pointer(None, StorageClass::PushConstant, pc_struct);
    let pc = b.variable(pc_ptr, None, StorageClass::PushConstant, None);

    let in_v3 = b.type_pointer(None, StorageClass::Input, v3);
    let workgroup_id = b.variable(in_v3, None, StorageClass::Input, None);
    b.decorate(workgroup_id, Decoration::BuiltIn, [Operand::BuiltIn(BuiltIn::WorkgroupId)]);
    let local_id = b.variable(in_v3, None, StorageClass::Input, None);
    b.decorate(local_id, Decoration::BuiltIn, [Operand::BuiltIn(BuiltIn::LocalInvocationId)]);

    let spec = |b: &mut Builder, id: u32| {
        let c = b.spec_constant_bit32(u32_t, 1);
        b.decorate(c, Decoration::SpecId, [Operand::LiteralBit32(id)]);
        c
    };
    let block = [spec(b, 0), spec(b, 1), spec(b, 2)];
    let shared_words = spec(b, 3);

    let psb_u32 = b.type_pointer(None, StorageClass::PhysicalStorageBuffer, u32_t);
    let psb_u64 = b.type_pointer(None, StorageClass::PhysicalStorageBuffer, u64_t);

    let fn_t = b.type_function(void, []);
    let main = b.begin_function(void, None, FunctionControl::NONE, fn_t).expect("begin main");
    b.entry_point(ExecutionModel::GLCompute, main, "main", [pc, workgroup_id, local_id]);
    b.execution_mode_id(main, ExecutionMode::LocalSizeId, block);
    let entry_label = b.begin_block(None).expect("first block");

    Abi {
        u32_t,
        u64_t,
        bool_t,
        pc,
        workgroup_id,
        local_id,
        block,
        shared_words,
        psb_u32,
        psb_u64,
        entry_label,
    }
}

impl Abi {
    /// Loads push-constant member `member`.
    fn push(&self, b: &mut Builder, member: u32) -> Word {
        let ty = if member < 2 { self.u64_t } else { self.u32_t };
        let ptr_t = b.type_pointer(None, StorageClass::PushConstant, ty);
        let index = b.constant_bit32(self.u32_t, member);
        let ptr = b.access_chain(ptr_t, None, self.pc, [index]).expect("access chain");
        b.load(ty, None, ptr, None, []).expect("load push constant")
    }

    fn builtin(&self, b: &mut Builder, var: Word) -> [Word; 3] {
        let v3 = b.type_vector(self.u32_t, 3);
        let v = b.load(v3, None, var, None, []).expect("load builtin");
        [0, 1, 2].map(|i| b.composite_extract(self.u32_t, None, v, [i]).expect("extract"))
    }

    fn add32(&self, b: &mut Builder, x: Word, y: Word) -> Word {
        b.i_add(self.u32_t, None, x, y).expect("iadd")
    }

    fn mul32(&self, b: &mut Builder, x: Word, y: Word) -> Word {
        b.i_mul(self.u32_t, None, x, y).expect("imul")
    }

    /// Loads a `u64` from global memory at `address`.
    fn load_u64(&self, b: &mut Builder, address: Word) -> Word {
        let ptr = b.convert_u_to_ptr(self.psb_u64, None, address).expect("to ptr");
        b.load(self.u64_t, None, ptr, Some(MemoryAccess::ALIGNED), [Operand::LiteralBit32(8)])
            .expect("load u64")
    }

    /// Loads a `u32` from global memory at `address`.
    fn load_u32(&self, b: &mut Builder, address: Word) -> Word {
        let ptr = b.convert_u_to_ptr(self.psb_u32, None, address).expect("to ptr");
        b.load(self.u32_t, None, ptr, Some(MemoryAccess::ALIGNED), [Operand::LiteralBit32(4)])
            .expect("load u32")
    }

    /// `address + offset` for a u64 address and a u32 offset.
    fn offset(&self, b: &mut Builder, address: Word, offset: u64) -> Word {
        let c = b.constant_bit64(self.u64_t, offset);
        b.i_add(self.u64_t, None, address, c).expect("address add")
    }

    /// Stores a `u32` to global memory at `address`.
    fn store_u32(&self, b: &mut Builder, address: Word, value: Word, volatile: bool) {
        let ptr = b.convert_u_to_ptr(self.psb_u32, None, address).expect("to ptr");
        let mut access = MemoryAccess::ALIGNED;
        if volatile {
            access |= MemoryAccess::VOLATILE;
        }
        b.store(ptr, value, Some(access), [Operand::LiteralBit32(4)]).expect("store");
    }
}

fn finish(mut b: Builder) -> Vec<u32> {
    b.ret().expect("ret");
    b.end_function().expect("end function");
    let words = b.module().assemble();
    spirv_val(&words);
    words
}

/// Words per record written by [`record_kernel`].
pub const RECORD_WORDS: usize = 16;
/// Last word of every record.
pub const RECORD_MAGIC: u32 = 0x00C0_FFEE;

/// A kernel in which every thread writes one 16-word record to `out[global thread index]`,
/// where `out` is the `u64` at offset 0 of the parameter block:
/// `[tid.x, tid.y, tid.z, ntid.x, ntid.y, ntid.z, ctaid.x, ctaid.y, ctaid.z,
///   nctaid.x, nctaid.y, nctaid.z, shared_words, const_address lo, const_address hi, MAGIC]`
/// with `ctaid = WorkgroupId + ctaid_base`, `ntid` from spec constants 0-2, `nctaid` from
/// the push constants, and the global index
/// `((ctaid.z * nctaid.y + ctaid.y) * nctaid.x + ctaid.x) * threads + (tid.z * ntid.y + tid.y) * ntid.x + tid.x`.
pub fn record_kernel() -> Vec<u32> {
    let mut builder = Builder::new();
    let abi = begin(&mut builder);
    let b = &mut builder;

    let param = abi.push(b, 0);
    let const_address = abi.push(b, 1);
    let base = [abi.push(b, 2), abi.push(b, 3), abi.push(b, 4)];
    let grid = [abi.push(b, 5), abi.push(b, 6), abi.push(b, 7)];
    let workgroup = abi.builtin(b, abi.workgroup_id);
    let tid = abi.builtin(b, abi.local_id);
    let ctaid = [0, 1, 2].map(|i| abi.add32(b, workgroup[i], base[i]));
    let ntid = abi.block;

    let block_zy = abi.mul32(b, ctaid[2], grid[1]);
    let block_zy = abi.add32(b, block_zy, ctaid[1]);
    let block_linear = abi.mul32(b, block_zy, grid[0]);
    let block_linear = abi.add32(b, block_linear, ctaid[0]);
    let threads = abi.mul32(b, ntid[0], ntid[1]);
    let threads = abi.mul32(b, threads, ntid[2]);
    let tid_zy = abi.mul32(b, tid[2], ntid[1]);
    let tid_zy = abi.add32(b, tid_zy, tid[1]);
    let tid_linear = abi.mul32(b, tid_zy, ntid[0]);
    let tid_linear = abi.add32(b, tid_linear, tid[0]);
    let global = abi.mul32(b, block_linear, threads);
    let global = abi.add32(b, global, tid_linear);

    let out = abi.load_u64(b, param);
    let global64 = b.u_convert(abi.u64_t, None, global).expect("uconvert");
    let record_bytes = b.constant_bit64(abi.u64_t, (RECORD_WORDS * 4) as u64);
    let record_offset = b.i_mul(abi.u64_t, None, global64, record_bytes).expect("imul");
    let record = b.i_add(abi.u64_t, None, out, record_offset).expect("iadd");

    let const_lo = b.u_convert(abi.u32_t, None, const_address).expect("uconvert");
    let c32 = b.constant_bit64(abi.u64_t, 32);
    let const_hi = b.shift_right_logical(abi.u64_t, None, const_address, c32).expect("shift");
    let const_hi = b.u_convert(abi.u32_t, None, const_hi).expect("uconvert");
    let magic = b.constant_bit32(abi.u32_t, RECORD_MAGIC);

    let values = [
        tid[0],
        tid[1],
        tid[2],
        ntid[0],
        ntid[1],
        ntid[2],
        ctaid[0],
        ctaid[1],
        ctaid[2],
        grid[0],
        grid[1],
        grid[2],
        abi.shared_words,
        const_lo,
        const_hi,
        magic,
    ];
    for (i, value) in values.into_iter().enumerate() {
        let address = abi.offset(b, record, 4 * i as u64);
        abi.store_u32(b, address, value, false);
    }
    finish(builder)
}

/// A kernel in which every thread stores `0, 1, ..., n - 1` (volatile, so the loop cannot
/// be folded) to the `u32` at `out`, where the parameter block is `{ u64 out; u32 n; }`.
/// The last value stored is `n - 1` whatever the number of threads.
pub fn spin_kernel() -> Vec<u32> {
    let mut builder = Builder::new();
    let abi = begin(&mut builder);
    let b = &mut builder;

    let param = abi.push(b, 0);
    let out = abi.load_u64(b, param);
    let n_address = abi.offset(b, param, 8);
    let n_ptr = b.convert_u_to_ptr(abi.psb_u32, None, n_address).expect("to ptr");
    let n = b
        .load(abi.u32_t, None, n_ptr, Some(MemoryAccess::ALIGNED), [Operand::LiteralBit32(4)])
        .expect("load n");
    let zero = b.constant_bit32(abi.u32_t, 0);
    let one = b.constant_bit32(abi.u32_t, 1);

    let entry = abi.entry_label;
    let header = b.id();
    let body = b.id();
    let continue_block = b.id();
    let merge = b.id();
    let next = b.id();
    b.branch(header).expect("branch");

    b.begin_block(Some(header)).expect("header");
    let i = b.phi(abi.u32_t, None, [(zero, entry), (next, continue_block)]).expect("phi");
    let more = b.u_less_than(abi.bool_t, None, i, n).expect("ult");
    b.loop_merge(merge, continue_block, LoopControl::NONE, []).expect("loop merge");
    b.branch_conditional(more, body, merge, []).expect("branch");

    b.begin_block(Some(body)).expect("body");
    abi.store_u32(b, out, i, true);
    b.branch(continue_block).expect("branch");

    b.begin_block(Some(continue_block)).expect("continue");
    b.i_add(abi.u32_t, Some(next), i, one).expect("iadd");
    b.branch(header).expect("branch");

    b.begin_block(Some(merge)).expect("merge");
    finish(builder)
}

/// Decodes little-endian `u32`s.
pub fn words(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// A kernel over a parameter block `{ u64 src; u64 dst; u32 a; u32 b; }` in which thread
/// `i = ctaid.x * ntid.x + tid.x` computes `dst[i] = src[i] * a + b` on `u32`s (wrapping).
/// Launch exactly one thread per element.
pub fn affine_kernel() -> Vec<u32> {
    let mut builder = Builder::new();
    let abi = begin(&mut builder);
    let b = &mut builder;

    let param = abi.push(b, 0);
    let base_x = abi.push(b, 2);
    let workgroup = abi.builtin(b, abi.workgroup_id);
    let tid = abi.builtin(b, abi.local_id);
    let ctaid = abi.add32(b, workgroup[0], base_x);
    let i = abi.mul32(b, ctaid, abi.block[0]);
    let i = abi.add32(b, i, tid[0]);
    let i64 = b.u_convert(abi.u64_t, None, i).expect("uconvert");
    let four = b.constant_bit64(abi.u64_t, 4);
    let byte = b.i_mul(abi.u64_t, None, i64, four).expect("imul");

    let src = abi.load_u64(b, param);
    let dst_address = abi.offset(b, param, 8);
    let dst = abi.load_u64(b, dst_address);
    let a_address = abi.offset(b, param, 16);
    let a = abi.load_u32(b, a_address);
    let b_address = abi.offset(b, param, 20);
    let add = abi.load_u32(b, b_address);

    let from = b.i_add(abi.u64_t, None, src, byte).expect("iadd");
    let x = abi.load_u32(b, from);
    let y = abi.mul32(b, x, a);
    let y = abi.add32(b, y, add);
    let to = b.i_add(abi.u64_t, None, dst, byte).expect("iadd");
    abi.store_u32(b, to, y, false);
    finish(builder)
}

/// The parameter block of [`affine_kernel`].
pub fn affine_params(src: u64, dst: u64, a: u32, b: u32) -> Vec<u8> {
    let mut bytes = src.to_le_bytes().to_vec();
    bytes.extend(dst.to_le_bytes());
    bytes.extend(a.to_le_bytes());
    bytes.extend(b.to_le_bytes());
    bytes
}

/// Encodes little-endian `u32`s.
pub fn bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Fails the test when the validation layers (if enabled) reported anything.
pub fn assert_no_validation_messages() {
    let messages = ptxvk_vk::validation_messages();
    assert!(messages.is_empty(), "Vulkan validation reported:\n{}", messages.join("\n"));
}
