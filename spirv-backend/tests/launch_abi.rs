//! The SPIR-V the backend emits follows the launch ABI of `ptxvk-abi`, which the runtime
//! reads too: the push-constant struct's members have the ABI's offsets and widths, and
//! the specialization constants carry the ABI's ids (block size through `LocalSizeId`,
//! shared words, dynamic shared bytes).

use rspirv::spirv::{Decoration, ExecutionMode, Op, StorageClass};

use ptxvk_abi::{spec_ids, PUSH_CONSTANT_MEMBERS};

/// A kernel that reads every push constant (parameters, `%ctaid`, `%nctaid`, module
/// data) and the dynamic shared-memory size, with static and dynamic shared memory.
const PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.const .u32 table[2] = {5, 6};
.extern .shared .align 4 .b8 dyn[];
.visible .entry k(.param .u64 out)
{
    .shared .u32 s[4];
    .reg .u32 %r<12>;
    .reg .u64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %nctaid.y;
    ld.const.u32 %r3, [table+4];
    mov.u32 %r4, %dynamic_smem_size;
    st.shared.u32 [s], %r1;
    st.shared.u32 [dyn], %r2;
    bar.sync 0;
    ld.shared.u32 %r5, [s];
    ld.shared.u32 %r6, [dyn];
    add.u32 %r7, %r5, %r6;
    add.u32 %r8, %r7, %r3;
    add.u32 %r9, %r8, %r4;
    st.global.u32 [%rd1], %r9;
    ret;
}
"#;

/// The module's instructions as (opcode, operand words), after the 5-word header
/// (SPIR-V §2.3). rspirv's loader does not know `OpExecutionModeId`.
fn instructions() -> Vec<(u32, Vec<u32>)> {
    let m = ptxvk_frontend::parse(PTX).expect("parse");
    let kernels = ptxvk_lower::lower(&m).expect("lower");
    let spirv = ptxvk_spirv::compile(&kernels).expect("compile");
    ptxvk_spirv::validate(&spirv.words).expect("valid SPIR-V");
    let mut out = Vec::new();
    let mut words = &spirv.words[5..];
    while let Some(&first) = words.first() {
        let count = (first >> 16) as usize;
        assert!(count >= 1 && count <= words.len(), "malformed instruction");
        out.push((first & 0xffff, words[1..count].to_vec()));
        words = &words[count..];
    }
    out
}

fn op(o: Op) -> u32 {
    o as u32
}

#[test]
fn push_constant_members_have_the_abi_offsets_and_widths() {
    let insts = instructions();
    // Type and variable definitions by result id (operand 0 for types, 1 for variables).
    let def = |opcode: Op, id: u32, at: usize| {
        insts
            .iter()
            .find(|(o, w)| *o == op(opcode) && w.get(at) == Some(&id))
            .map(|(_, w)| w.clone())
            .unwrap_or_else(|| panic!("no {opcode:?} defines %{id}"))
    };
    let (_, var) = insts
        .iter()
        .find(|(o, w)| *o == op(Op::Variable) && w[2] == StorageClass::PushConstant as u32)
        .expect("a push-constant variable");
    let pointer = def(Op::TypePointer, var[0], 0);
    let block_id = pointer[2];
    let block = def(Op::TypeStruct, block_id, 0);
    let widths: Vec<u32> = block[1..].iter().map(|&t| def(Op::TypeInt, t, 0)[1]).collect();
    let mut offsets = vec![None; widths.len()];
    for (o, w) in &insts {
        if *o == op(Op::MemberDecorate) && w[0] == block_id && w[2] == Decoration::Offset as u32 {
            offsets[w[1] as usize] = Some(w[3]);
        }
    }
    let want: Vec<(Option<u32>, u32)> =
        PUSH_CONSTANT_MEMBERS.iter().map(|m| (Some(m.offset), m.bits)).collect();
    let got: Vec<(Option<u32>, u32)> = offsets.into_iter().zip(widths).collect();
    assert_eq!(got, want);
}

#[test]
fn specialization_constants_carry_the_abi_ids() {
    let insts = instructions();
    let spec_id = |id: u32| {
        insts.iter().find_map(|(o, w)| {
            (*o == op(Op::Decorate) && w[0] == id && w[1] == Decoration::SpecId as u32)
                .then(|| w[2])
        })
    };
    // LocalSizeId's operands are the block-size constants, in order x, y, z.
    let (_, local_size) = insts
        .iter()
        .find(|(o, w)| *o == op(Op::ExecutionModeId) && w[1] == ExecutionMode::LocalSizeId as u32)
        .expect("LocalSizeId");
    let block: Vec<Option<u32>> = local_size[2..5].iter().map(|&id| spec_id(id)).collect();
    assert_eq!(block, [Some(spec_ids::BLOCK_X), Some(spec_ids::BLOCK_Y), Some(spec_ids::BLOCK_Z)]);
    let mut ids: Vec<u32> = insts
        .iter()
        .filter(|(o, w)| *o == op(Op::Decorate) && w[1] == Decoration::SpecId as u32)
        .map(|(_, w)| w[2])
        .collect();
    ids.sort_unstable();
    let all = [
        spec_ids::BLOCK_X,
        spec_ids::BLOCK_Y,
        spec_ids::BLOCK_Z,
        spec_ids::SHARED_WORDS,
        spec_ids::DYNAMIC_SHARED_BYTES,
    ];
    assert_eq!(ids, all);
}
