//! The system area: how a kernel reports to the host what CUDA's system calls report
//! (ABI guide §4): `trap`, failed assertions (`__assertfail`) and `printf` (`vprintf`);
//! and where `malloc` finds the device heap.
//!
//! A kernel that uses any of them (`Kernel::system` in `ptxvk-lower`) gets a system area in
//! the same device buffer as its parameter block, at [`offset`] (the block's size
//! rounded up to 32), so the launch ABI needs no new push constant. The host zeroes the
//! header before the launch and reads the area back after it. All values little-endian:
//!
//! | bytes | contents |
//! |---|---|
//! | 0..4 | status: 0, or the first [`STATUS_TRAP`] / [`STATUS_ASSERT`] / [`STATUS_BARRIER`] / [`STATUS_STACK`] / … / [`STATUS_LOOP_LIMIT`] (compare-and-swap from 0) |
//! | 4..8 | bytes of printf records reserved (atomic add; may pass [`PRINTF_CAPACITY`]) |
//! | 8..32 | the failing thread: `%ctaid.x/y/z`, `%tid.x/y/z` (u32 each) |
//! | 32..36 | the assertion's line (a partial barrier's thread count, the bytes that did not fit the stack) |
//! | 36..40 | block scheduler: blocks of the grid that run and do not wait ([`BLOCKS_ACTIVE`]) |
//! | 40..64 | the assertion's message, file and function (generic addresses, u64 each) |
//! | 64..72 | the device heap's address (written by the host; 0 without a heap) |
//! | 72..80 | grid barriers: the address of the launch's grid save area ([`GRID_SAVE`]; written by the host) |
//! | 80..84 | checked launches: violations found (atomic add) |
//! | 84..88 | checked launches: violation records made (atomic add; picks the slot, may pass [`CHECK_CAPACITY`]) |
//! | 88..96 | checked launches: the allocation table's address (written by the host) |
//! | 96..104 | checked launches: the parameter ranges' address (written by the host) |
//! | 104..108 | initcheck: all ones (written by the host), the shadow word of memory without a shadow |
//! | 108..112 | block scheduler: blocks that started, finished, or went on after waiting ([`BLOCK_EVENTS`]) |
//! | 112..120 | device-side launches: the launch arena's address (written by the host; [`crate::device_launch`]) |
//! | 120..128 | grid workspace of cooperative groups' inline grid barrier: u32 size, u32 barrier word ([`GRID_WORKSPACE`]) |
//! | 128..160 | checked launches: the sink, where a refused global access goes instead |
//! | 160.. | printf records, [`PRINTF_CAPACITY`] bytes |
//! | [`CHECK_RECORDS`].. | checked launches: [`CHECK_CAPACITY`] + 1 violation records |
//!
//! The device heap (`malloc`/`free`) is a buffer of [`HEAP_BYTES`] per loaded module
//! that persists across launches, like CUDA's. It is a bump allocator: its first u64
//! counts the bytes handed out (atomic add), allocations are 16-byte aligned and start
//! at byte 16, `malloc` returns 0 when the heap is exhausted, and `free` does nothing.
//!
//! A printf record is [`RECORD_HEADER`] bytes: u32 record size (a multiple of 8), u32
//! argument bytes (bit 31 set when the argument buffer was not in local memory and
//! could not be copied), u64 format address, u32 `%ctaid.x/y/z` and `%tid.x/y/z`; then
//! the copied argument buffer. Records are appended in the order their threads reserve
//! them, so each thread's output is in program order. A record that does not fit is
//! dropped (the reserved count tells the host how much was lost), as CUDA drops output
//! past its printf FIFO.
//!
//! A checked kernel (`ptxvk-lower`'s `pass::check`) records each access it refuses, and under
//! racecheck each shared access that races, in a [`CHECK_RECORD`]-byte record, small
//! so that each access's code is: u32 violation ([`VIOLATION_BOUNDS`],
//! [`VIOLATION_MISALIGNED`], [`VIOLATION_RACE`], [`VIOLATION_UNINITIALIZED`]) in bits
//! 29-31 and site (an index into
//! the kernel's `Kernel::check_sites`) below; u32 thread
//! (`%tid.x | %tid.y << 10 | %tid.z << 20`); u64 address (a device address for global
//! memory, an offset for the other spaces; for a race, the offset and the other
//! access, as [`VIOLATION_RACE`] says); u64 block
//! (`%ctaid.x | %ctaid.y << 32 | %ctaid.z << 48`). The record index is
//! the record counter's old value ([`CHECK_SLOTS`]; a record may stand for several
//! violations, which [`CHECK_COUNT`] counts), capped at [`CHECK_CAPACITY`]: records past
//! the capacity overwrite the last slot, which the host ignores. The allocation table
//! the host writes (anywhere in host-visible memory) is a u32 entry count n ≥ 1, then
//! from byte 16 n entries of u64 start and u64 end, sorted by start, the first (0, 0)
//! so that every address has an entry at or below it. Bit 63 of an end
//! ([`TABLE_READ_ONLY`]) marks memory the kernel may only read (its parameter block),
//! which no device address reaches. After the n entries come n u64 shadow addresses,
//! one per entry: the device address of the allocation's write shadow (`ptxvk_vk`'s
//! `shadow` module: bit `w % 32` of u32 word `w / 32` set once 4-byte word `w` was
//! written), or 0 for memory without one, which counts as written. The parameter
//! ranges are one (u64 start, u64 end) per kernel parameter: for a pointer-sized one,
//! the allocation its value points into (empty when none), which `pass::check` tests
//! accesses derived from it against first; then one u64 shadow address per parameter,
//! that allocation's. A confined launch (an unchecked kernel on a device that runs it
//! inside the host process) has [`CONFINED_OUTSIDE`] + 1 ranges instead: the device's
//! confinement range, which every global access is tested against first, then the
//! allocations outside it (registered host memory, memory of another process; when
//! there are more, the closest are merged with the gaps between them), which an access
//! outside the range is tested against.

/// Status of a launch in which a thread executed `trap`.
pub const STATUS_TRAP: u32 = 1;
/// Status of a launch in which an assertion failed.
pub const STATUS_ASSERT: u32 = 2;
/// Status of a launch that reached a barrier for fewer threads than its block has
/// (`ptxvk-lower`'s `sema::barrier`); the line field holds the thread count.
pub const STATUS_BARRIER: u32 = 3;
/// Status of a launch in which an `alloca`, or a recursive call's frame or save area
/// (the function field is then 1), did not fit the thread's stack; the line field
/// holds the requested size (truncated to 32 bits), the file field the stack's size.
pub const STATUS_STACK: u32 = 4;
/// Status of a launch in which a block waited at a grid synchronization for longer
/// than any resident grid needs: not every block of the grid was running.
pub const STATUS_GRID_SYNC: u32 = 6;
/// Status of a launch in which an `mbarrier.init` asked for more arrivals than ptxvk's
/// mbarriers count (the layout of `lower/src/ir/mbarrier.rs`); the line field holds the
/// count.
pub const STATUS_MBARRIER: u32 = 7;
/// Status of a launch that ran more loop iterations in one subgroup than the driver
/// allows before it silently ends every loop (`pass::loop_guard`, Mesa 22.3's
/// lavapipe): the line field holds the loop's index in the kernel's
/// `Kernel::guarded_loops`, the file field the guard's limit.
pub const STATUS_LOOP_LIMIT: u32 = 8;
/// The largest arrival count of ptxvk's mbarrier layout (`lower/src/ir/mbarrier.rs`).
pub const MBARRIER_MAX_COUNT: u32 = 0x7ff;

/// Status of a launch in which a block of a kernel with polling loops could not go on
/// (`pass::schedule`): every thread left waited at a barrier or warp collective that
/// the others would never reach. The line field holds the index of the waiting
/// thread's wait site (`Kernel::wait_sites`).
pub const STATUS_DEADLOCK: u32 = 9;
/// Status of a launch in which a block of a kernel with polling loops made no progress
/// for `pass::schedule::IDLE_LIMIT` rounds in which no other block of the grid ran
/// either ([`BLOCKS_ACTIVE`] 0, [`BLOCK_EVENTS`] unchanged): its threads only went
/// round loops that wait for memory nothing will write (a later block's that cannot
/// start, a block's that waits too, or nobody's). The line field holds the index of
/// the polling loop's site (`Kernel::wait_sites`).
pub const STATUS_SPIN: u32 = 10;

/// Blocks of a launch of a kernel with polling loops (`pass::schedule`) that have
/// started, have not finished and do not wait: a block adds 1 when it starts, and
/// subtracts 1 when it has gone `pass::schedule`'s quiet limit of rounds without
/// progress (adding it back when it progresses again) or when it ends. A block's
/// [`STATUS_SPIN`] count runs only while this is 0 (atomic add; wraps).
pub const BLOCKS_ACTIVE: u32 = 36;
/// Events of such a launch that may end another block's wait: a block started, ended,
/// or stopped or started waiting (atomic add). A waiting block's count of rounds
/// without progress starts again whenever it changes.
pub const BLOCK_EVENTS: u32 = 108;

pub const STATUS: u32 = 0;
pub const PRINTF_USED: u32 = 4;
pub const THREAD: u32 = 8;
pub const LINE: u32 = 32;
pub const MESSAGE: u32 = 40;
pub const FILE: u32 = 48;
pub const FUNCTION: u32 = 56;
pub const HEAP: u32 = 64;
/// The device address of the launch's grid save area, for a kernel split into phases
/// at its grid barriers ([`GridSave`]).
pub const GRID_SAVE: u32 = 72;
pub const CHECK_COUNT: u32 = 80;
pub const CHECK_SLOTS: u32 = 84;
pub const CHECK_TABLE: u32 = 88;
pub const CHECK_PARAMS: u32 = 96;
/// How many allocations outside its confinement range a confined launch passes
/// after the range itself (module docs).
pub const CONFINED_OUTSIDE: u32 = 4;
pub const ALL_WRITTEN: u32 = 104;
/// The launch arena of a kernel that launches kernels ([`crate::device_launch`]).
pub const LAUNCH_ARENA: u32 = 112;
/// The grid workspace whose address `%envreg2` (low half) and `%envreg1` (high half)
/// hold: CUDA 12's cooperative-groups headers read it there and synchronize the grid on
/// its second word (`struct grid_workspace { unsigned size, barrier; }`, flipping bit 31
/// once per barrier). Zeroed with the header, which a flipping barrier does not need.
pub const GRID_WORKSPACE: u32 = 120;
/// 32 bytes, 32-byte aligned (the area is), for the widest access (`.v8.b32`).
pub const SINK: u32 = 128;
pub const HEADER: u32 = 160;

/// Bytes of a module's device heap (CUDA's default `cudaLimitMallocHeapSize`).
pub const HEAP_BYTES: u64 = 8 << 20;
/// Where allocations start in the heap (after its counter).
pub const HEAP_START: u64 = 16;

/// Bytes for printf records (CUDA's default printf FIFO is 1 MiB).
pub const PRINTF_CAPACITY: u32 = 1 << 20;
/// Bytes before a record's arguments.
pub const RECORD_HEADER: u32 = 40;
/// At most this many bytes of a printf argument buffer are copied (CUDA allows 32
/// arguments of at most 8 bytes).
pub const MAX_ARGUMENT_BYTES: u32 = 256;
/// Bit of a record's argument size saying the arguments were not copied.
pub const ARGUMENTS_MISSING: u32 = 1 << 31;

/// Total bytes of the area.
pub const SIZE: u32 = HEADER + PRINTF_CAPACITY;

/// A checked access outside every allocation (or the space's window).
pub const VIOLATION_BOUNDS: u32 = 1;
/// A checked access whose address is not a multiple of its size.
pub const VIOLATION_MISALIGNED: u32 = 2;
/// A shared access that races with another thread's (racecheck). The record's address
/// field then holds the shared offset in bits 0-31, and the other access's linear
/// thread from bit [`RACE_OTHER_THREAD`], its site from bit [`RACE_OTHER_SITE`], and
/// in bit [`RACE_OTHER_WROTE`] whether it was a write.
pub const VIOLATION_RACE: u32 = 3;
pub const RACE_OTHER_THREAD: u32 = 32;
pub const RACE_OTHER_SITE: u32 = 42;
pub const RACE_OTHER_WROTE: u32 = 63;
/// A global read (or atomic) of words no one has written (initcheck); it happened.
pub const VIOLATION_UNINITIALIZED: u32 = 4;
/// Where a checked launch's violation records start.
pub const CHECK_RECORDS: u32 = SIZE;
/// Bytes of a violation record.
pub const CHECK_RECORD: u32 = 24;
/// Where a record's packed violation and site has its violation.
pub const VIOLATION_SHIFT: u32 = 29;
/// Violation records a launch keeps; the count goes on past it.
pub const CHECK_CAPACITY: u32 = 4096;
/// Total bytes of the area of a checked kernel (the allocation table aside).
pub const CHECKED_SIZE: u32 = CHECK_RECORDS + (CHECK_CAPACITY + 1) * CHECK_RECORD;
/// Where entries start in the allocation table.
pub const TABLE_ENTRIES: u32 = 16;
/// The bit of an allocation table entry's end that makes the range read-only.
pub const TABLE_READ_ONLY: u64 = 1 << 63;

/// One violation a checked launch recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Violation {
    /// [`VIOLATION_BOUNDS`] or [`VIOLATION_MISALIGNED`].
    pub kind: u32,
    /// Index into the kernel's check sites.
    pub site: u32,
    pub address: u64,
    pub ctaid: [u32; 3],
    pub tid: [u32; 3],
}

/// The violations of a checked launch from its area (`area` starts at the system
/// area's header and holds at least its records): how many there were, and the records
/// kept.
pub fn decode_violations(area: &[u8]) -> (u32, Vec<Violation>) {
    let count = u32_at(area, CHECK_COUNT as usize);
    let kept = u32_at(area, CHECK_SLOTS as usize).min(CHECK_CAPACITY) as usize;
    let fields = |packed: u64, shifts: [u32; 3], widths: [u32; 3]| {
        [0, 1, 2].map(|i| ((packed >> shifts[i]) & ((1 << widths[i]) - 1)) as u32)
    };
    let records = (0..kept)
        .map(|i| {
            let at = CHECK_RECORDS as usize + i * CHECK_RECORD as usize;
            let packed = u32_at(area, at);
            Violation {
                kind: packed >> VIOLATION_SHIFT,
                site: packed & ((1 << VIOLATION_SHIFT) - 1),
                address: u64_at(area, at + 8),
                ctaid: fields(u64_at(area, at + 16), [0, 32, 48], [32, 16, 16]),
                tid: fields(u64::from(u32_at(area, at + 4)), [0, 10, 20], [10, 10, 10]),
            }
        })
        .collect();
    (count, records)
}

/// Where the system area starts in the buffer of a parameter block of `param_bytes`.
pub fn offset(param_bytes: u32) -> u32 {
    param_bytes.next_multiple_of(32)
}

/// What a launch reported, decoded from its system area.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// `STATUS_TRAP` or `STATUS_ASSERT`, with the thread (`ctaid`, `tid`).
    pub failure: Option<Failure>,
    pub records: Vec<PrintfRecord>,
    /// Bytes of printf output that did not fit.
    pub dropped_bytes: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub status: u32,
    pub ctaid: [u32; 3],
    pub tid: [u32; 3],
    pub line: u32,
    pub message: u64,
    pub file: u64,
    pub function: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrintfRecord {
    pub format: u64,
    pub ctaid: [u32; 3],
    pub tid: [u32; 3],
    /// The argument buffer, or `None` when it could not be copied.
    pub arguments: Option<Vec<u8>>,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4).map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from(u32_at(b, at)) | u64::from(u32_at(b, at + 4)) << 32
}

fn three(b: &[u8], at: usize) -> [u32; 3] {
    [u32_at(b, at), u32_at(b, at + 4), u32_at(b, at + 8)]
}

/// Decodes a system area read back after a launch (malformed records end the list).
pub fn decode(area: &[u8]) -> Report {
    let status = u32_at(area, STATUS as usize);
    let failure = (status != 0).then(|| Failure {
        status,
        ctaid: three(area, THREAD as usize),
        tid: three(area, THREAD as usize + 12),
        line: u32_at(area, LINE as usize),
        message: u64_at(area, MESSAGE as usize),
        file: u64_at(area, FILE as usize),
        function: u64_at(area, FUNCTION as usize),
    });
    let used = u64::from(u32_at(area, PRINTF_USED as usize));
    let end = used.min(u64::from(PRINTF_CAPACITY)) as usize;
    let mut records = Vec::new();
    let mut pos = 0usize;
    let base = HEADER as usize;
    while pos + RECORD_HEADER as usize <= end {
        let at = base + pos;
        let size = u32_at(area, at) as usize;
        let args = u32_at(area, at + 4);
        if size < RECORD_HEADER as usize || pos + size > end {
            break;
        }
        let n = (args & !ARGUMENTS_MISSING) as usize;
        let start = at + RECORD_HEADER as usize;
        let arguments = if args & ARGUMENTS_MISSING != 0 {
            None
        } else {
            area.get(start..start + n.min(size - RECORD_HEADER as usize)).map(<[u8]>::to_vec)
        };
        records.push(PrintfRecord {
            format: u64_at(area, at + 8),
            ctaid: three(area, at + 16),
            tid: three(area, at + 28),
            arguments,
        });
        pos += size;
    }
    Report { failure, records, dropped_bytes: used.saturating_sub(pos as u64) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_a_failure_and_records() {
        let mut area = vec![0u8; SIZE as usize];
        let put =
            |a: &mut Vec<u8>, at: usize, v: u32| a[at..at + 4].copy_from_slice(&v.to_le_bytes());
        put(&mut area, 0, STATUS_ASSERT);
        put(&mut area, 8, 3);
        put(&mut area, 20, 7);
        put(&mut area, 32, 42);
        // One record with 8 argument bytes, one with missing arguments, then 48 bytes
        // that did not fit.
        let r = HEADER as usize;
        put(&mut area, r, 48);
        put(&mut area, r + 4, 8);
        put(&mut area, r + 8, 0x1000);
        put(&mut area, r + 40, 5);
        put(&mut area, r + 48, 40);
        put(&mut area, r + 52, ARGUMENTS_MISSING);
        put(&mut area, 4, 48 + 40 + 48);
        let rep = decode(&area);
        let f = rep.failure.expect("failure");
        assert_eq!((f.status, f.ctaid, f.tid, f.line), (STATUS_ASSERT, [3, 0, 0], [7, 0, 0], 42));
        assert_eq!(rep.records.len(), 2);
        assert_eq!(rep.records[0].format, 0x1000);
        assert_eq!(rep.records[0].arguments.as_deref(), Some(&[5, 0, 0, 0, 0, 0, 0, 0][..]));
        assert_eq!(rep.records[1].arguments, None);
        assert_eq!(rep.dropped_bytes, 48);
    }

    #[test]
    fn blocks_within_a_budget_fill_it_and_no_more() {
        for (threads, shared, record) in [(1, 0, 8), (32, 0, 16), (128, 4100, 48), (1024, 49152, 8)]
        {
            for budget in [0u64, 40, 1 << 12, 1 << 20, (1 << 24) + 7] {
                let n = GridSave::blocks_within(budget, threads, shared, record);
                if n > 0 {
                    assert!(GridSave::new(n, threads, shared, record).size <= budget);
                }
                assert!(GridSave::new(n + 1, threads, shared, record).size > budget);
            }
        }
    }
}

/// The grid save area of a launch of a kernel split into phases at its grid barriers
/// (`ptxvk-lower`'s `pass::split_grid`): the launch runs as consecutive dispatches of
/// the whole grid (phases); a thread that reaches a grid barrier saves its live
/// registers and local window in its record, its block's shared window in the block's
/// save, sets its resume slot and ends; the next phase restores them and goes on after
/// the barrier. All values little-endian; the host zeroes bytes `0..data` (header,
/// block words, slots) and writes the header's fields:
///
/// | bytes | contents |
/// |---|---|
/// | 0..4 | threads suspended at a grid barrier and not yet resumed (atomic add, wraps) |
/// | 4..8 | bytes of shared window each block saves (a multiple of 4); its save takes them rounded up to 8 |
/// | 8..16 | u64 offset of the resume slots |
/// | 16..24 | u64 offset of the blocks' data |
/// | 24..32 | u64 bytes of one block's data |
/// | 32.. | a u32 per block (linear index): its threads' arrivals at grid barriers over all phases (tickets for the shared copy; non-zero once its shared window was saved) |
/// | slots.. | a u32 per thread (linear block index × threads per block + linear thread index): 0 start, k + 1 resume after barrier k, [`GRID_DONE`] done or resumed |
/// | data.. | per block: its shared save, then a record of `record_bytes` per thread |
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridSave {
    pub blocks: u64,
    pub threads: u64,
    /// Bytes of shared window saved (a multiple of 4).
    pub shared_bytes: u64,
    /// Bytes of a block's shared save (a multiple of 8).
    pub shared_save: u64,
    pub slots: u64,
    pub data: u64,
    pub stride: u64,
    pub size: u64,
}

/// Header field: threads suspended (u32).
pub const GRID_SUSPENDED: u32 = 0;
/// Header field: bytes of a block's shared save (u32).
pub const GRID_SHARED_SAVE: u32 = 4;
/// Header field: offset of the slots (u64).
pub const GRID_SLOTS: u32 = 8;
/// Header field: offset of the blocks' data (u64).
pub const GRID_DATA: u32 = 16;
/// Header field: bytes of one block's data (u64).
pub const GRID_STRIDE: u32 = 24;
/// Where the block words start.
pub const GRID_BLOCK_WORDS: u32 = 32;
/// A resume slot's value for a thread with nothing left to run in later phases.
pub const GRID_DONE: u32 = u32::MAX;

impl GridSave {
    /// The layout for `blocks` blocks of `threads` threads with `shared_bytes` of shared
    /// window each and records of `record_bytes` (a multiple of 8).
    pub fn new(blocks: u64, threads: u64, shared_bytes: u64, record_bytes: u64) -> GridSave {
        let shared_bytes = shared_bytes.next_multiple_of(4);
        let shared_save = shared_bytes.next_multiple_of(8);
        let slots = u64::from(GRID_BLOCK_WORDS) + 4 * blocks;
        let data = (slots + 4 * blocks * threads).next_multiple_of(8);
        let stride = shared_save + threads * record_bytes;
        let size = data + blocks * stride;
        GridSave { blocks, threads, shared_bytes, shared_save, slots, data, stride, size }
    }

    /// The most blocks of `threads` threads whose save area ([`GridSave::new`]) fits in
    /// `budget` bytes (0 when not even one does).
    pub fn blocks_within(budget: u64, threads: u64, shared_bytes: u64, record_bytes: u64) -> u64 {
        let one = GridSave::new(1, threads, shared_bytes, record_bytes);
        // Each block adds its word, its threads' slots and its data; the 8-byte alignment
        // of the data adds at most 4 bytes once, so the estimate is at most one short.
        let per_block = 4 + 4 * threads + one.stride;
        let fixed = u64::from(GRID_BLOCK_WORDS) + 4;
        let mut blocks = budget.saturating_sub(fixed) / per_block.max(1);
        if GridSave::new(blocks + 1, threads, shared_bytes, record_bytes).size <= budget {
            blocks += 1;
        }
        blocks
    }

    /// The header, written at the area's start over the zeroed control words.
    pub fn header(&self) -> [u8; GRID_BLOCK_WORDS as usize] {
        let mut h = [0u8; GRID_BLOCK_WORDS as usize];
        h[4..8].copy_from_slice(&(self.shared_bytes as u32).to_le_bytes());
        h[8..16].copy_from_slice(&self.slots.to_le_bytes());
        h[16..24].copy_from_slice(&self.data.to_le_bytes());
        h[24..32].copy_from_slice(&self.stride.to_le_bytes());
        h
    }
}
