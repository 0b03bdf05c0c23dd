//! Device-side launches (CUDA Dynamic Parallelism, CUDA Programming Guide, "CUDA
//! Dynamic Parallelism"): the launch arena a kernel records its launches in, shared by
//! `ptxvk-lower`'s `pass::expand_system` (which writes it; `sema::device_launch`
//! resolves the calls) and the runtime (which reads it after the
//! grid completed and runs the launches).
//!
//! Since CUDA 12 a parent grid cannot wait for its children (`cudaDeviceSynchronize`
//! in device code is gone), so a launch only has to happen after the parent grid
//! completed: the kernel records it, and the runtime runs it when the grid is done,
//! before the stream the parent was launched on moves on.
//!
//! A kernel that launches (its `Kernel::device_launches` is not empty) has a
//! system area ([`crate::system`]) whose [`crate::system::LAUNCH_ARENA`] field holds the
//! address of its arena, a host-visible buffer the runtime zeroes and fills in before
//! each launch. All values little-endian; offsets in bytes from the arena's start:
//!
//! | bytes | contents |
//! |---|---|
//! | 0..4 | [`USED`]: bytes of the data region handed out (atomic add; may pass the end) |
//! | 4..8 | [`COUNT`]: launches that claimed a slot (atomic add; may pass [`ROOM`]) |
//! | 8..12 | [`ROOM`]: launches this grid may make (host): the pending-launch limit less the launches already pending |
//! | 12..16 | [`DEPTH`]: the grid's nesting depth (host): 0 for a grid the host launched |
//! | 16..20 | [`DATA_START`]: where the data region starts (host), a multiple of [`SLOT_ALIGN`] |
//! | 20..24 | [`DATA_END`]: where it ends (host) |
//! | 32.. | [`TABLE`]: one u32 per launch slot, the arena offset of the launch's buffer header |
//! | `DATA_START..DATA_END` | parameter buffers, each after its [`HEADER_BYTES`]-byte header |
//!
//! `cudaGetParameterBuffer(alignment, size)` (and `cudaGetParameterBufferV2`) takes
//! `HEADER_BYTES + size` rounded up, and more for alignments above [`SLOT_ALIGN`],
//! from the data region with an atomic add, and returns the address after the header,
//! or 0 when the region is exhausted. The header holds what the launch needs (V2
//! writes the function, grid, block and shared size when the buffer is taken; V1 when
//! it is launched):
//!
//! | header bytes | contents |
//! |---|---|
//! | 0..8 | the kernel's address ([`KERNEL_WINDOW`] + 1 + its index in the launcher's table) |
//! | 8..20 | grid x, y, z |
//! | 20..32 | block x, y, z |
//! | 32..36 | dynamic shared bytes |
//! | 40..48 | the stream (`cudaStreamTailLaunch` = [`STREAM_TAIL`], `cudaStreamFireAndForget` = [`STREAM_FIRE_AND_FORGET`], 0, or a handle from `cudaStreamCreateWithFlags`) |
//!
//! `cudaLaunchDevice` checks the buffer (it must come from this grid's arena), the
//! kernel, the configuration and the nesting depth, then claims a slot: the old
//! [`COUNT`]. A slot below [`ROOM`] gets the header's offset in the table and the
//! launch returns `cudaSuccess`; otherwise it returns
//! `cudaErrorLaunchPendingCountExceeded`. Errors are also the thread's last error
//! (`cudaGetLastError`).

/// Bytes of the data region handed out.
pub const USED: u32 = 0;
/// Launches that claimed a slot.
pub const COUNT: u32 = 4;
/// Launches this grid may make.
pub const ROOM: u32 = 8;
/// The grid's nesting depth.
pub const DEPTH: u32 = 12;
/// Start of the data region.
pub const DATA_START: u32 = 16;
/// End of the data region.
pub const DATA_END: u32 = 20;
/// The slot table.
pub const TABLE: u32 = 32;

/// Bytes of a parameter buffer's header.
pub const HEADER_BYTES: u32 = 64;
/// Header fields.
pub const H_FUNC: u32 = 0;
pub const H_GRID: u32 = 8;
pub const H_BLOCK: u32 = 20;
pub const H_SHARED: u32 = 32;
pub const H_STREAM: u32 = 40;
/// Every allocation starts at a multiple of this, so buffers are aligned to it (CUDA
/// asks for at least the largest parameter alignment; larger requests are honoured up
/// to [`MAX_ALIGN`]).
pub const SLOT_ALIGN: u32 = 64;
/// The largest alignment `cudaGetParameterBuffer` honours; larger ones get 0.
pub const MAX_ALIGN: u32 = 256;
/// The largest parameter buffer: PTX ISA 8.1+'s kernel parameter limit.
pub const MAX_PARAM_BYTES: u32 = 32_764;

/// Kernel addresses (`mov.u64 %rd, kernel;`): this window plus one plus the kernel's
/// index among the module's kernels in name order. No memory is there; it lies below
/// [`crate::window::FUNCTION_WINDOW`].
pub const KERNEL_WINDOW: u64 = 0xffff_fffc_0000_0000;

/// `cudaStreamTailLaunch` (`cuda_device_runtime_api.h`).
pub const STREAM_TAIL: u64 = 3;
/// `cudaStreamFireAndForget`.
pub const STREAM_FIRE_AND_FORGET: u64 = 4;
/// The handle `cudaStreamCreateWithFlags` gives: every stream a grid creates runs its
/// work in launch order after the grid, as the others do, so one value serves.
pub const STREAM_CREATED: u64 = 0x5354_0000;

/// CUDA's default `cudaLimitDevRuntimePendingLaunchCount`.
pub const DEFAULT_PENDING_LIMIT: u32 = 2048;
/// The deepest a launch may nest: a grid at this depth cannot launch (CUDA Programming
/// Guide, "Nesting and Synchronization Depth": 24 levels).
pub const MAX_DEPTH: u32 = 24;
/// Bytes of parameter buffers per launch slot the runtime sets aside at least
/// ([`slot_bytes`] gives more to modules with larger parameter blocks).
pub const DATA_PER_SLOT: u32 = 1024;

/// Bytes of the data region per launch slot for a module whose largest parameter
/// block has `max_params` bytes: room for one buffer of each launch.
pub fn slot_bytes(max_params: u32) -> u32 {
    let buffer = max_params.min(MAX_PARAM_BYTES).next_multiple_of(SLOT_ALIGN);
    (buffer + HEADER_BYTES).max(DATA_PER_SLOT)
}

/// `cudaError_t` values the device runtime returns (`driver_types.h`).
pub const CUDA_SUCCESS: u32 = 0;
pub const CUDA_ERROR_INVALID_VALUE: u32 = 1;
pub const CUDA_ERROR_INVALID_CONFIGURATION: u32 = 9;
pub const CUDA_ERROR_LAUNCH_MAX_DEPTH_EXCEEDED: u32 = 65;
pub const CUDA_ERROR_LAUNCH_PENDING_COUNT_EXCEEDED: u32 = 69;
pub const CUDA_ERROR_INVALID_DEVICE_FUNCTION: u32 = 98;

/// Where the data region starts in an arena with `slots` launch slots.
pub fn data_start(slots: u32) -> u32 {
    (TABLE + 4 * slots).next_multiple_of(MAX_ALIGN)
}

/// Bytes of an arena with `slots` launch slots of `per_slot` data bytes each
/// ([`slot_bytes`]).
pub fn arena_bytes(slots: u32, per_slot: u32) -> u64 {
    let data = (u64::from(slots.max(1)) * u64::from(per_slot)).min(u64::from(u32::MAX >> 1));
    u64::from(data_start(slots)) + data
}

/// The arena's header for a grid at `depth` that may make `room` launches, in an arena
/// of `slots` slots of `per_slot` data bytes.
pub fn arena_header(slots: u32, per_slot: u32, room: u32, depth: u32) -> [u8; TABLE as usize] {
    let mut h = [0u8; TABLE as usize];
    let end = u32::try_from(arena_bytes(slots, per_slot)).unwrap_or(u32::MAX);
    for (at, v) in [(ROOM, room.min(slots)), (DEPTH, depth), (DATA_START, data_start(slots))]
        .into_iter()
        .chain([(DATA_END, end)])
    {
        h[at as usize..at as usize + 4].copy_from_slice(&v.to_le_bytes());
    }
    h
}

/// One launch a grid recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// Index into the launcher's `Kernel::device_launches`.
    pub kernel: usize,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    pub stream: u64,
    /// Arena offset of the parameter buffer.
    pub params_at: u32,
}

impl Recorded {
    /// Whether the launch went to the grid's tail-launch stream.
    pub fn is_tail(&self) -> bool {
        self.stream == STREAM_TAIL
    }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from(u32_at(b, at)?) | u64::from(u32_at(b, at + 4)?) << 32)
}

/// The launches recorded in `arena` (its bytes after the grid), in slot order, which
/// is the order the launching threads claimed them. A slot whose header lies outside
/// the arena is an error naming it (the device code never makes one).
pub fn decode(arena: &[u8], kernels: usize) -> Result<Vec<Recorded>, String> {
    let count = u32_at(arena, COUNT as usize).unwrap_or(0);
    let room = u32_at(arena, ROOM as usize).unwrap_or(0);
    let mut out = Vec::new();
    for slot in 0..count.min(room) {
        let at = TABLE as usize + 4 * slot as usize;
        let header = u32_at(arena, at).ok_or_else(|| format!("launch slot {slot} is missing"))?;
        let h = header as usize;
        let bad = || format!("launch slot {slot} names a header outside the arena ({header})");
        let func = u64_at(arena, h + H_FUNC as usize).ok_or_else(bad)?;
        let dims = |off: u32| -> Option<[u32; 3]> {
            let o = h + off as usize;
            Some([u32_at(arena, o)?, u32_at(arena, o + 4)?, u32_at(arena, o + 8)?])
        };
        let index = func.wrapping_sub(KERNEL_WINDOW + 1);
        if index >= kernels as u64 {
            return Err(format!("launch slot {slot} names no kernel ({func:#x})"));
        }
        out.push(Recorded {
            kernel: index as usize,
            grid: dims(H_GRID).ok_or_else(bad)?,
            block: dims(H_BLOCK).ok_or_else(bad)?,
            shared_bytes: u32_at(arena, h + H_SHARED as usize).ok_or_else(bad)?,
            stream: u64_at(arena, h + H_STREAM as usize).ok_or_else(bad)?,
            params_at: header + HEADER_BYTES,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_slots_a_grid_filled() {
        let slots = 4;
        let mut arena = vec![0u8; arena_bytes(slots, DATA_PER_SLOT) as usize];
        arena[..TABLE as usize].copy_from_slice(&arena_header(slots, DATA_PER_SLOT, 2, 1));
        let put = |a: &mut Vec<u8>, at: u32, v: u32| {
            a[at as usize..at as usize + 4].copy_from_slice(&v.to_le_bytes())
        };
        let start = data_start(slots);
        // Three launches tried, two fit the room.
        put(&mut arena, COUNT, 3);
        for (slot, (kernel, stream)) in [(1u64, 0u64), (0, STREAM_TAIL)].into_iter().enumerate() {
            let h = start + slot as u32 * 128;
            put(&mut arena, TABLE + 4 * slot as u32, h);
            let func = KERNEL_WINDOW + 1 + kernel;
            put(&mut arena, h, func as u32);
            put(&mut arena, h + 4, (func >> 32) as u32);
            for k in 0..3 {
                put(&mut arena, h + H_GRID + 4 * k, 2 + k);
                put(&mut arena, h + H_BLOCK + 4 * k, 32 >> k);
            }
            put(&mut arena, h + H_STREAM, stream as u32);
        }
        let got = decode(&arena, 2).expect("decodes");
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].kernel, got[0].grid, got[0].block), (1, [2, 3, 4], [32, 16, 8]));
        assert!(!got[0].is_tail() && got[1].is_tail());
        assert_eq!(got[1].params_at, start + 128 + HEADER_BYTES);
        // A kernel index past the table is refused.
        assert!(decode(&arena, 1).is_err());
    }
}
