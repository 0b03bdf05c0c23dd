//! A failure of the emitter names the instruction it was emitting: its error carries the
//! span of that instruction's PTX source, which the CLI renders as `file:line:column`.

use ptxvk_lower::ir::{InstKind, SyncPoint};

const PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .u64 %rd<2>;
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1], 7;
    ret;
}
"#;

#[test]
fn an_instruction_the_emitter_cannot_emit_is_named_by_its_span() {
    let m = ptxvk_frontend::parse(PTX).expect("parse");
    let mut kernels = ptxvk_lower::lower(&m).expect("lower");
    // A sync point is the scheduler's to remove (`pass::schedule`); one left over is a
    // broken invariant the emitter reports. Put it where the store is.
    let store = kernels[0]
        .kernel
        .blocks
        .iter_mut()
        .flat_map(|b| b.insts.iter_mut())
        .find(|i| matches!(i.kind, InstKind::Store { .. }))
        .expect("the store");
    store.kind = InstKind::SyncPoint { point: SyncPoint::Sleep };
    let span = store.span;
    let error = ptxvk_spirv::compile(&kernels).expect_err("the emitter refuses a sync point");
    assert!(error.is_internal(), "{error}");
    assert_eq!(error.span(), Some(span));
    let line = PTX[..span.start as usize].lines().count();
    assert!(PTX.lines().nth(line - 1).is_some_and(|l| l.contains("st.global.u32")));
    assert!(error.to_string().contains("sync point"), "{error}");
}
