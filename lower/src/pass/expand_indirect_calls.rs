//! Indirect calls: every [`InstKind::CallIndirect`] of the kernel and of its functions
//! becomes a test of the function address against each arm's address, in arm order,
//! and the arm's [`InstKind::Call`] where it holds (`crate::ir::CallArm`'s doc
//! specifies the operation):
//!
//! ```text
//!   b:      ...  %t1 = setp.eq.u64 %target, ADDR0     ; branch %t1, call0, next0
//!   call0:  RESULTS0 = call.fnF0 ARGS0                ; jump join
//!   next0:  %t2 = setp.eq.u64 %target, ADDR1          ; branch %t2, call1, next1
//!   ...
//!   nextN:  jump join                                 ; no candidate: no call
//!   join:   the instructions after the call, b's terminator
//! ```
//!
//! It runs before `pass::inline`, which inlines the calls (or, for calls into a call
//! cycle, builds `pass::recursion`'s machine); the arms' callees are the edges
//! `pass::recursion::cycles` already counts.
//!
//! Pre: the kernel verifies. Post: no `CallIndirect` is left; the kernel computes what
//! it computed.

use ptxvk_frontend::Diagnostic;

use super::expander::{self, Blocks};
use crate::build::Build;
use crate::ir::{CmpOp, InstKind, Kernel, OpTy, Terminator, Value};

/// Whether `kind` is an instruction this pass expands (`pass::leftover`).
pub fn is_indirect_call(kind: &InstKind) -> bool {
    matches!(kind, InstKind::CallIndirect { .. })
}

/// Expands every indirect call of `k` and of its functions (module doc).
pub fn run(k: &mut Kernel) -> Result<(), Diagnostic> {
    expand(k)?;
    let mut functions = std::mem::take(&mut k.functions);
    let expanded = functions.iter_mut().try_for_each(|f| f.rewrite_in_shell(expand));
    k.functions = functions;
    expanded
}

/// Expands the indirect calls of one body.
fn expand(k: &mut Kernel) -> Result<(), Diagnostic> {
    expander::each(k, is_indirect_call, |k, cur, span, kind| {
        let InstKind::CallIndirect { target, arms } = kind else { return Ok(cur) };
        let mut e = Expand { k, cur, span };
        let join = e.new_block();
        for arm in arms {
            let hit = e.cmp(CmpOp::Eq, OpTy::U(64), target, Value::Imm(arm.address));
            let (call, next) = (e.new_block(), e.new_block());
            let branch =
                Terminator::Branch { cond: hit, negate: false, if_true: call, if_false: next };
            e.end_block(branch, call);
            let (callee, args, results) = (arm.callee, arm.args, arm.results);
            e.push(InstKind::Call { callee, args, results });
            e.end_block(Terminator::Jump(join), next);
        }
        e.end_block(Terminator::Jump(join), join);
        Ok(e.cur)
    })
}

expander::expansion!(
    /// Builds the test chain of one indirect call from block `cur` on.
    struct Expand
);

#[cfg(test)]
mod tests {
    use crate::interp::check::{self, Program, BUFFER_STRIDE};
    use crate::interp::{self, memory::Region, Launch};
    use crate::ir::{InstKind, Kernel, FUNCTION_WINDOW};

    /// Each thread calls through the address of `add1`, `exit4` (which ends thread 4) or
    /// 0 by `t % 3`: the address of no candidate (no call: the result keeps 99).
    const INDIRECT: &str = ".version 8.0\n.target sm_80\n.address_size 64\n\
.func (.param .b32 r) add1(.param .b32 a)\n{\n .reg .b32 %r<3>;\n\
 ld.param.b32 %r1, [a];\n add.u32 %r2, %r1, 1;\n st.param.b32 [r], %r2;\n ret;\n}\n\
.func (.param .b32 r) exit4(.param .b32 a)\n{\n .reg .b32 %r<3>;\n .reg .pred %p<2>;\n\
 ld.param.b32 %r1, [a];\n setp.eq.u32 %p1, %r1, 4;\n @%p1 exit;\n\
 mul.lo.u32 %r2, %r1, 3;\n st.param.b32 [r], %r2;\n ret;\n}\n\
.entry k(.param .u64 p)\n{\n .reg .b32 %r<4>;\n .reg .b64 %rd<6>;\n .reg .pred %p<3>;\n\
 T: .calltargets add1, exit4;\n\
 ld.param.u64 %rd1, [p];\n mov.u32 %r1, %tid.x;\n rem.u32 %r3, %r1, 3;\n\
 mov.u64 %rd4, add1;\n mov.u64 %rd5, exit4;\n setp.eq.u32 %p1, %r3, 1;\n\
 selp.b64 %rd2, %rd5, %rd4, %p1;\n setp.eq.u32 %p2, %r3, 2;\n selp.b64 %rd2, 0, %rd2, %p2;\n\
 mul.wide.u32 %rd3, %r1, 4;\n add.u64 %rd1, %rd1, %rd3;\n\
 { .param .b32 a; .param .b32 r;\n st.param.b32 [a], %r1;\n st.param.b32 [r], 99;\n\
   call (r), %rd2, (a), T;\n ld.param.b32 %r2, [r]; }\n\
 st.global.u32 [%rd1], %r2;\n ret;\n}\n";

    fn kernel(ptx: &str) -> Kernel {
        let module = ptxvk_frontend::parse(ptx).expect("parses");
        crate::sema::run(&module).expect("lowers").kernels.remove(0)
    }

    /// Semantic analysis makes the call one `CallIndirect` over the `.calltargets`, at
    /// their addresses; written out and inlined, it computes what it did.
    #[test]
    fn an_indirect_call_is_one_operation_written_out_in_tests_and_calls() {
        let k = kernel(INDIRECT);
        let arms: Vec<Vec<(u64, &str)>> = k
            .all_insts()
            .filter_map(|i| match &i.kind {
                InstKind::CallIndirect { arms, .. } => Some(
                    arms.iter()
                        .map(|a| (a.address, k.functions[a.callee.index()].name.as_str()))
                        .collect(),
                ),
                _ => None,
            })
            .collect();
        assert_eq!(arms, [[(FUNCTION_WINDOW | 1, "add1"), (FUNCTION_WINDOW | 2, "exit4")]]);
        let mut expanded = k.clone();
        super::run(&mut expanded).expect("expands");
        crate::verify::run(&expanded).unwrap_or_else(|d| panic!("{d:?}"));
        assert!(!expanded.all_insts().any(|i| super::is_indirect_call(&i.kind)));
        let mut inlined = expanded.clone();
        crate::pass::inline::run(&mut inlined).expect("inlines");
        let tally = check::check(Program::cfg(&k), Program::cfg(&expanded), 36, 4)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(tally.observed > 0, "{tally:?}");
        let launch = Launch {
            grid: [1, 1, 1],
            block: [9, 1, 1],
            params: BUFFER_STRIDE.to_le_bytes().to_vec(),
            buffers: vec![Region { base: BUFFER_STRIDE, bytes: vec![0xee; 36] }],
            dynamic_shared: 0,
            step_limit: 100_000,
        };
        for program in [&k, &expanded, &inlined] {
            let out = interp::run(program, None, &launch).expect("runs");
            for t in 0..9u32 {
                let at = 4 * t as usize;
                let word = u32::from_le_bytes(out.buffers[0][at..at + 4].try_into().unwrap());
                let want = match t % 3 {
                    0 => t + 1,
                    1 if t == 4 => 0xeeee_eeee,
                    1 => 3 * t,
                    _ => 99,
                };
                assert_eq!(word, want, "thread {t}");
            }
        }
    }
}
