//! The model of [`InstKind::System`] before `pass::expand_system`, written from the
//! system area's layout (`crate::system`, ABI guide §4) rather than from the
//! expansion: a failure is recorded when the status word is still 0, with the thread
//! and the details at their fields; a printf record is appended at the reserved count
//! when it fits the capacity, with the argument buffer's bytes copied from the local
//! window (whole words, at most 256 bytes, none when the buffer is elsewhere); `malloc`
//! takes its rounded size from the heap's counter. One thread runs at a time, so every
//! read-modify-write is atomic.
//!
//! Not modelled ([`Error::Unsupported`]): the grid barrier and the grid workspace (the
//! interpreter runs one block after another, so no grid-wide barrier can complete;
//! `super::super::run` refuses kernels with one), and the device-side launches (the
//! launch arena is written by the host's runtime, which the interpreter does not
//! model).

use ptxvk_frontend::Span;

use super::{Ctx, Error, Thread};
use crate::ir::{Space, SystemInst, LOCAL_WINDOW};
use crate::system as sys;

impl Thread<'_> {
    /// The system area's device address (after the parameter block, `crate::system`).
    fn system_area(cx: &Ctx<'_>) -> u64 {
        cx.param_base + u64::from(sys::offset(cx.k.abi.size))
    }

    /// Runs a system operation.
    pub(super) fn exec_system(
        &mut self,
        cx: &mut Ctx<'_>,
        s: &SystemInst,
        span: Span,
    ) -> Result<(), Error> {
        let area = Self::system_area(cx);
        match s {
            SystemInst::Fail(f) => {
                if cx.memory.read(area + u64::from(sys::STATUS), 4, span)? != 0 {
                    return Ok(());
                }
                cx.memory.write(area + u64::from(sys::STATUS), 4, u64::from(f.status), span)?;
                self.write_thread(cx, area + u64::from(sys::THREAD), span)?;
                let fields =
                    [(sys::MESSAGE, 8), (sys::FILE, 8), (sys::LINE, 4), (sys::FUNCTION, 8)];
                for (v, (at, size)) in f.details.iter().zip(fields) {
                    cx.memory.write(area + u64::from(at), size, self.get(*v), span)?;
                }
                Ok(())
            }
            SystemInst::Printf { format, arguments } => {
                self.printf(cx, area, self.get(*format), self.get(*arguments), span)
            }
            SystemInst::Malloc { dst, size } => {
                let heap = cx.memory.read(area + u64::from(sys::HEAP), 8, span)?;
                let room = sys::HEAP_BYTES - sys::HEAP_START;
                let rounded = self.get(*size).wrapping_add(15) & !15;
                let ptr = if rounded > room {
                    0
                } else {
                    let used = cx.memory.read(heap, 8, span)?;
                    cx.memory.write(heap, 8, used.wrapping_add(rounded), span)?;
                    if used <= room - rounded {
                        heap + sys::HEAP_START + used
                    } else {
                        0
                    }
                };
                self.set(cx.k, *dst, ptr);
                Ok(())
            }
            SystemInst::GridSync | SystemInst::GridWorkspace { .. } => {
                Err(Error::Unsupported { what: "grid-wide barriers".into(), span })
            }
        }
    }

    /// `%ctaid` and `%tid`, six u32, at `at`.
    fn write_thread(&self, cx: &mut Ctx<'_>, at: u64, span: Span) -> Result<(), Error> {
        let ids = cx.ctaid.into_iter().chain(self.tid);
        for (i, id) in ids.enumerate() {
            cx.memory.write(at + 4 * i as u64, 4, u64::from(id), span)?;
        }
        Ok(())
    }

    /// Appends a printf record (`crate::system`'s layout).
    fn printf(
        &mut self,
        cx: &mut Ctx<'_>,
        area: u64,
        format: u64,
        arguments: u64,
        span: Span,
    ) -> Result<(), Error> {
        let local = arguments >> 32 == LOCAL_WINDOW >> 32;
        let offset = arguments & 0xffff_ffff;
        let window = u64::from(cx.k.local_bytes);
        let n = if local { window.saturating_sub(offset).min(256) } else { 0 };
        let missing = if local || arguments == 0 { 0 } else { u64::from(sys::ARGUMENTS_MISSING) };
        let size = u64::from(sys::RECORD_HEADER) + n.next_multiple_of(8);
        let used_at = area + u64::from(sys::PRINTF_USED);
        let start = cx.memory.read(used_at, 4, span)?;
        cx.memory.write(used_at, 4, start.wrapping_add(size) & 0xffff_ffff, span)?;
        if (start + size) & 0xffff_ffff > u64::from(sys::PRINTF_CAPACITY) {
            return Ok(());
        }
        let rec = area + u64::from(sys::HEADER) + start;
        cx.memory.write(rec, 4, size, span)?;
        cx.memory.write(rec + 4, 4, n | missing, span)?;
        cx.memory.write(rec + 8, 8, format, span)?;
        self.write_thread(cx, rec + 16, span)?;
        // The buffer a 32-bit word at a time, as many words as start below `n`.
        for k in (0..n).step_by(4) {
            let word = self.read(cx, Space::Local, (offset + k) & 0xffff_ffff, 4, span)?;
            cx.memory.write(rec + u64::from(sys::RECORD_HEADER) + k, 4, word, span)?;
        }
        Ok(())
    }
}

/// The printf records of a system area (`crate::system`'s layout) from its header on,
/// each with its bytes, in a canonical order: by thread (`%ctaid`, `%tid`), each
/// thread's in the order it wrote them, since the order between threads depends on
/// how they interleave.
pub(in crate::interp) fn printf_records(area: &[u8]) -> Vec<Vec<u8>> {
    let word = |at: usize| {
        area.get(at..at + 4).map_or(0, |w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
    };
    let used = (word(sys::PRINTF_USED as usize) as usize).min(sys::PRINTF_CAPACITY as usize);
    let mut records = Vec::new();
    let mut at = sys::HEADER as usize;
    while at < sys::HEADER as usize + used {
        let size = word(at) as usize;
        let Some(bytes) = area.get(at..at + size) else { break };
        if size < sys::RECORD_HEADER as usize {
            break;
        }
        records.push(bytes.to_vec());
        at += size;
    }
    records.sort_by_key(|r| r[16..40].to_vec());
    records
}
