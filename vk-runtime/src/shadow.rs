//! Write shadows: which 4-byte words of a device allocation something has written, for
//! initcheck (`PTXVK_CHECK=initcheck`, [`Device::set_track_writes`]).
//!
//! A tracked allocation has a shadow: host-visible memory with bit `w % 32` of u32 word
//! `w / 32` set once word `w` of the allocation (bytes `4w..4w + 4`) has been written.
//! It starts clear, however the allocation was filled internally (`cudaMalloc`'s memory is
//! undefined; ptxvk's zero-filling is not a write of the program's). The host sets bits
//! for its copies and memsets into the allocation when it enqueues them
//! ([`Buffer::mark_written`]); kernels set bits for their own stores and test them before
//! their loads, through the shadow's device address ([`Buffer::shadow_address`]).
//!
//! Granularity is the word: a write of part of a word marks all of it (a later read of
//! its other bytes is not reported). Device-to-device copies mark their destination
//! written, whatever the source's state. Host, registered and managed memory, which the
//! host writes without the runtime seeing it, and allocations made before tracking was
//! enabled have no shadow and count as written.

use std::sync::atomic::{AtomicU32, Ordering};

use gpu_allocator::MemoryLocation;

use crate::error::Error;
use crate::memory::Buffer;
use crate::objects::{Device, DeviceShared, Memory, MemoryKind, Shadow};

/// Bytes of allocation one shadow word covers (32 words of 4 bytes).
const BYTES_PER_SHADOW_WORD: u64 = 128;

impl Shadow {
    /// A clear shadow for an allocation of `size` bytes.
    fn new(shared: &DeviceShared, size: u64) -> Result<Shadow, Error> {
        let bytes = size.div_ceil(BYTES_PER_SHADOW_WORD).max(1) * 4;
        let location = MemoryLocation::CpuToGpu;
        let memory = Memory::allocate(shared, bytes, location, MemoryKind::Host, "ptxvk shadow")?;
        memory.write_mapped(0, &vec![0u8; memory.capacity as usize])?;
        Ok(Shadow { memory })
    }

    /// Sets the bits of the words that bytes `offset..offset + len` touch.
    fn mark(&self, offset: u64, len: u64) {
        if len == 0 {
            return;
        }
        let (first, last) = (offset / 4, (offset + len - 1) / 4);
        let mut word = first;
        while word <= last {
            let index = word / 32;
            let bit = word % 32;
            let count = (32 - bit).min(last - word + 1);
            let mask = if count == 32 { u32::MAX } else { ((1u32 << count) - 1) << bit };
            self.or(index, mask);
            word += count;
        }
    }

    /// ORs `mask` into shadow word `index` (atomically: kernels set bits concurrently).
    fn or(&self, index: u64, mask: u32) {
        let Ok(Some(ptr)) = self.memory.mapped_range("shadow", index * 4, 4) else { return };
        // SAFETY: `ptr..ptr + 4` lies inside the live, host-coherent mapping (range
        // checked); it is 4-byte aligned (the mapping is, and the offset is a multiple of
        // 4); kernels update the same words only with atomics, so an atomic view of them
        // is sound for as long as the shadow lives, which outlasts this call.
        let word = unsafe { AtomicU32::from_ptr(ptr.cast::<u32>()) };
        word.fetch_or(mask, Ordering::Relaxed);
    }
}

impl Buffer {
    /// Gives the buffer a clear shadow, if it has none ([`crate::shadow`]).
    pub(crate) fn track_writes(&self, shared: &DeviceShared) -> Result<(), Error> {
        if self.inner.shadow.get().is_none() {
            let shadow = Shadow::new(shared, self.size())?;
            if let Err(unused) = self.inner.shadow.set(shadow) {
                unused.memory.destroy(&shared.gpu);
            }
        }
        Ok(())
    }

    /// Records that bytes `offset..offset + len` have been written, in the buffer's
    /// shadow when it has one (`shadow.rs`).
    pub fn mark_written(&self, offset: u64, len: u64) {
        if let Some(shadow) = self.inner.shadow.get() {
            shadow.mark(offset, len);
        }
    }

    /// The device address of the buffer's shadow (`shadow.rs`), or 0 when it has
    /// none.
    pub fn shadow_address(&self) -> u64 {
        self.inner.shadow.get().map_or(0, |s| s.memory.address)
    }
}

impl Device {
    /// Gives every device allocation made from now on (`alloc`, pools) a write shadow,
    /// for initcheck (`shadow.rs`); `false` stops giving new ones shadows.
    pub fn set_track_writes(&self, on: bool) {
        self.shared.track_writes.store(on, Ordering::Relaxed);
    }

    /// Whether allocations made now get a write shadow ([`Self::set_track_writes`]).
    pub fn tracks_writes(&self) -> bool {
        self.shared.track_writes.load(Ordering::Relaxed)
    }

    /// Gives `buffer` a shadow when the device tracks writes.
    pub(crate) fn maybe_track(&self, buffer: &Buffer) -> Result<(), Error> {
        if self.tracks_writes() {
            buffer.track_writes(&self.shared)?;
        }
        Ok(())
    }

    /// The device address of the write shadow of the allocation starting at `start`, or
    /// 0 when it has none (`shadow.rs`).
    pub fn shadow_of(&self, start: u64) -> u64 {
        self.resolve(start).filter(|r| r.offset == 0).map_or(0, |r| r.buffer.shadow_address())
    }
}
