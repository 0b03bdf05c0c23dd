//! Sync points ([`InstKind::SyncPoint`](super::InstKind::SyncPoint)): where a thread may
//! have to wait for the other threads of its block, or may let them run
//! (`pass::schedule`).
//!
//! A warp sync point names the *kind* of collective it comes before
//! ([`WarpSyncKind`]): a `.sync` collective waits for the lanes of its member mask to
//! execute one "with the same qualifiers" (PTX ISA 9.2 §9.7.8.6), not necessarily the
//! same instruction, so the kind is the instruction's opcode and decoded modifiers,
//! spelled canonically (`ptxvk_frontend::decode::Qualifiers`): `shfl.sync.bfly.b32`.
//! The IR only compares kinds; `pass::schedule` numbers a kernel's distinct kinds
//! itself.

use super::Value;

/// What an [`InstKind::SyncPoint`](super::InstKind::SyncPoint) stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SyncPoint {
    /// Before a warp collective that every lane of `members` (PTX's 32-bit member mask)
    /// must reach before any of them goes on (PTX ISA 9.2 §9.7.8.6 ff., `.sync` forms).
    /// Collectives of one `kind` meet each other; others do not.
    Warp { members: Value, kind: WarpSyncKind },
    /// `nanosleep` (§9.7.13.11): the thread offers the others of its block a turn.
    Sleep,
    /// After an mbarrier wait's test (§9.7.13.15.16): what the waiting thread does next
    /// is ordered after the arrivals it waited for. Racecheck (`pass::check`) starts a
    /// block epoch of the thread there, as it does at a barrier.
    Acquire,
}

impl SyncPoint {
    /// What makes this sync point malformed (the verifier's check), if anything.
    pub fn malformed(&self) -> Option<&'static str> {
        match self {
            SyncPoint::Warp { kind, .. } if !kind.is_spelling() => {
                Some("a warp sync point whose kind is not an instruction's spelling")
            }
            _ => None,
        }
    }
}

/// The kind of collective a warp sync point comes before: the opcode and decoded
/// modifiers of the instruction, spelled canonically as PTX spells them (module doc).
/// Two kinds are the same collective kind exactly when they are equal; their order
/// (by spelling) is the one `pass::schedule` numbers them in.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct WarpSyncKind(String);

impl WarpSyncKind {
    /// The kind spelled `spelling` (`shfl.sync.idx.b32`).
    pub fn new(spelling: impl Into<String>) -> WarpSyncKind {
        WarpSyncKind(spelling.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the kind is an instruction's spelling, which the IR text writes as one
    /// word: an opcode (a letter, then letters, digits and `_`), then modifiers, each a
    /// `.` and letters, digits, `_` or `:` (`.L2::cache_hint`).
    pub fn is_spelling(&self) -> bool {
        let word = |s: &str, extra: char| {
            !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == extra)
        };
        let mut parts = self.0.split('.');
        let opcode = parts.next().unwrap_or("");
        opcode.starts_with(|c: char| c.is_ascii_alphabetic())
            && word(opcode, '_')
            && parts.all(|m| word(m, ':'))
    }
}

impl std::fmt::Display for WarpSyncKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::InstKind;

    const WAITS: &str = "\
kernel waits {
    params size 0 align 1
    shared 0
    local 0
    entry bb0
    reg i32 %r1
bb0:
    %r1 = special.tid.x
    sync_point.warp %r1, shfl.sync.bfly.b32
    sync_point.warp 0xffffffff, cp.async.bulk.L2::cache_hint
    return
}
";

    #[test]
    fn a_warp_sync_point_names_its_kind_by_spelling() {
        let mut k = crate::text::parse(WAITS).unwrap_or_else(|d| panic!("{d:?}")).remove(0);
        assert_eq!(crate::text::print(&k), WAITS);
        crate::verify::run(&k).unwrap_or_else(|d| panic!("{d:?}"));
        // A kind is a spelling, not a number (the text format before `ir::sync`).
        let numbered = WAITS.replace("shfl.sync.bfly.b32", "3");
        let d = crate::text::parse(&numbered).expect_err("a number is no kind");
        assert!(d.message.contains("spelling"), "{}", d.message);
        for bad in ["", "shfl sync", "shfl,sync", ".b32", "shfl..b32", "3"] {
            assert!(!WarpSyncKind::new(bad).is_spelling(), "{bad:?}");
        }
        let InstKind::SyncPoint { point: SyncPoint::Warp { kind, .. } } =
            &mut k.blocks[0].insts[1].kind
        else {
            panic!("the sync point");
        };
        *kind = WarpSyncKind::new("shfl sync");
        let errors = crate::verify::run(&k).expect_err("a kind the text cannot write");
        assert!(errors[0].message.contains("spelling"), "{}", errors[0].message);
    }
}
