//! The asynchronous copies ([`InstKind::Copy`]) in the IR text format, every field
//! written:
//!
//! ```text
//! cp_async.16 [%r1], [%rd2]
//! cp_async.16.src_size [%r1+16], [%rd2], %r3
//! cp_async.8.ignore_src [%r1], [%rd2], !%p1
//! cp_bulk.shared.global [%r1], [%rd2], %r3
//! cp_bulk.shared.shared.multicast [%r1], [%r2], 256, %h1
//! %r4 = cp_tensor.load.multicast [%r1], [%rd1+64], %r2, %r3, %h1
//! cp_tensor.store [%r1], [%rd1], %r2
//! ```
//!
//! `cp_async`: the size in bytes, then how much of the source is read (all when
//! neither `src_size` nor `ignore_src` is written); the destination (shared), the
//! source (global), then the count or the predicate. `cp_bulk`: the destination's and
//! the source's spaces; the addresses, the size, and the mask of `.multicast`.
//! `cp_tensor`: the direction; the box's shared address, the tensor map's address, the
//! coordinates and the mask of `.multicast`; the box's bytes (optional).

use ptxvk_frontend::Diagnostic;

use super::matrix::address;
use super::video::{take_flag, Line};
use super::Spelled;
use crate::ir::*;

/// A copy's line.
pub(super) fn print(
    c: &CopyInst,
    reg: impl Fn(RegId) -> String,
    value: impl Fn(Value) -> String,
) -> String {
    match c {
        CopyInst::Async(a) => {
            let (dst, src) = (address(a.dst, &reg), address(a.src, &reg));
            match a.read {
                CopyRead::All => format!("cp_async.{} {dst}, {src}", a.size),
                CopyRead::Count(n) => {
                    format!("cp_async.{}.src_size {dst}, {src}, {}", a.size, value(n))
                }
                CopyRead::IgnoreSrc { pred, negate } => format!(
                    "cp_async.{}.ignore_src {dst}, {src}, {}{}",
                    a.size,
                    if negate { "!" } else { "" },
                    reg(pred)
                ),
            }
        }
        CopyInst::Tensor(t) => {
            let head = match t.bytes {
                Some(r) => format!("{} = ", reg(r)),
                None => String::new(),
            };
            let dir = if t.load { "load" } else { "store" };
            let multicast = if t.mask.is_some() { ".multicast" } else { "" };
            let values: String =
                t.coords.iter().chain(&t.mask).map(|&v| format!(", {}", value(v))).collect();
            let (shared, map) = (address(t.shared, &reg), address(t.map, &reg));
            format!("{head}cp_tensor.{dir}{multicast} {shared}, {map}{values}")
        }
        CopyInst::Bulk(b) => {
            let (dst, src) = (address(b.dst, &reg), address(b.src, &reg));
            let spaces = format!("{}.{}", b.dst_space.spelling(), b.src_space.spelling());
            match b.mask {
                None => format!("cp_bulk.{spaces} {dst}, {src}, {}", value(b.size)),
                Some(m) => {
                    format!(
                        "cp_bulk.{spaces}.multicast {dst}, {src}, {}, {}",
                        value(b.size),
                        value(m)
                    )
                }
            }
        }
    }
}

/// The copy of a line whose opcode is one, else `None`; takes the modifiers it knows
/// from `words`. `addr` reads an address operand.
pub(super) fn parse<R, V, E>(
    line: &Line<'_, R, V, E>,
    words: &mut Vec<&str>,
    addr: impl Fn(&str) -> Result<Address, Diagnostic>,
) -> Result<Option<CopyInst>, Diagnostic>
where
    R: Fn(&str) -> Result<RegId, Diagnostic>,
    V: Fn(&str) -> Result<Value, Diagnostic>,
    E: Fn(String) -> Diagnostic,
{
    let opcode = line.opcode;
    if opcode != "cp_async" && opcode != "cp_bulk" && opcode != "cp_tensor" {
        return Ok(None);
    }
    let bad = |what: &str| (line.error)(format!("`{opcode}` needs {what}"));
    if opcode == "cp_tensor" {
        let load = match (take_flag(words, "load"), take_flag(words, "store")) {
            (true, false) => true,
            (false, true) => false,
            _ => return Err(bad("`.load` or `.store`")),
        };
        let multicast = take_flag(words, "multicast");
        let bytes = match line.dsts {
            [] => None,
            [d] => Some((line.reg)(d)?),
            _ => return Err(bad("at most one destination")),
        };
        let [shared, map, rest @ ..] = line.ops else {
            return Err(bad("[shared], [map] and coordinates"));
        };
        let mut values = rest.iter().map(|v| (line.value)(v)).collect::<Result<Vec<_>, _>>()?;
        let mask = if multicast { values.pop() } else { None };
        if multicast && mask.is_none() {
            return Err(bad("the mask of `.multicast`"));
        }
        let (shared, map) = (addr(shared)?, addr(map)?);
        let t = TensorCopy { load, map, coords: values, shared, mask, bytes };
        return Ok(Some(CopyInst::Tensor(t)));
    }
    if !line.dsts.is_empty() {
        return Err(bad("no destination register"));
    }
    if opcode == "cp_bulk" {
        let multicast = take_flag(words, "multicast");
        let space = |w: Option<&&str>| w.and_then(|w| Space::from_spelling(w));
        let (Some(dst_space), Some(src_space)) = (space(words.first()), space(words.get(1))) else {
            return Err(bad("a destination and a source space"));
        };
        words.drain(..2);
        let (dst, src, size, mask) = match (line.ops, multicast) {
            ([d, s, n], false) => (d, s, n, None),
            ([d, s, n, m], true) => (d, s, n, Some((line.value)(m)?)),
            _ => return Err(bad("[dst], [src], a size and the mask of `.multicast`")),
        };
        let (dst, src, size) = (addr(dst)?, addr(src)?, (line.value)(size)?);
        return Ok(Some(CopyInst::Bulk(BulkCopy { dst_space, dst, src_space, src, size, mask })));
    }
    let count = take_flag(words, "src_size");
    let ignore = take_flag(words, "ignore_src");
    let size = match words.first().map(|w| w.parse::<u32>()) {
        Some(Ok(n)) => n,
        _ => return Err(bad("a size `.4`, `.8` or `.16`")),
    };
    words.remove(0);
    let (dst, src, extra) = match line.ops {
        [d, s] => (d, s, None),
        [d, s, x] => (d, s, Some(*x)),
        _ => return Err(bad("[dst], [src] and a count or predicate")),
    };
    let read = match (count, ignore, extra) {
        (false, false, None) => CopyRead::All,
        (true, false, Some(x)) => CopyRead::Count((line.value)(x)?),
        (false, true, Some(x)) => {
            let (negate, p) = match x.strip_prefix('!') {
                Some(p) => (true, p),
                None => (false, x),
            };
            CopyRead::IgnoreSrc { pred: (line.reg)(p)?, negate }
        }
        _ => return Err(bad("a count after `.src_size`, a predicate after `.ignore_src`")),
    };
    Ok(Some(CopyInst::Async(AsyncCopy { dst: addr(dst)?, src: addr(src)?, size, read })))
}

#[cfg(test)]
mod tests {
    const COPIES: &str = "\
kernel copies {
    params size 0 align 1
    shared 256
    local 0
    entry bb0
    reg i64 %rd1
    reg i32 %r1 %r2
    reg i16 %h1
    reg pred %p1
bb0:
    cp_async.16 [%r1], [%rd1]
    cp_async.16.src_size [%r1+16], [%rd1-8], %r2
    cp_async.4.src_size [32], [%rd1], 3
    cp_async.8.ignore_src [%r1], [%rd1], !%p1
    cp_async.4.ignore_src [%r1], [%rd1], %p1
    cp_bulk.shared.global [%r1], [%rd1], %r2
    cp_bulk.global.shared [%rd1+16], [%r1], 64
    cp_bulk.shared.shared.multicast [%r1], [%r2], 256, %h1
    %r2 = cp_tensor.load.multicast [%r1], [%rd1+64], %r2, 3, %h1
    cp_tensor.store [%r1], [%rd1], %r1
    return
}
";

    #[test]
    fn copies_round_trip() {
        let kernels = super::super::parse(COPIES).unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(super::super::print(&kernels[0]), COPIES);
        assert!(crate::verify::run(&kernels[0]).is_ok());
    }
}
