//! A window of device memory for 32-bit PTX modules (`.address_size 32`): one buffer
//! of at most 4 GiB whose sub-allocations are ordinary [`Buffer`]s, so that every
//! pointer into them is a 32-bit offset from the window's base address. The compiler
//! adds that base to every 32-bit global address (the `window_base` push constant).
//!
//! Sub-allocations are first-fit in a free list of ranges (`BUFFER_ALIGNMENT`-aligned,
//! coalesced when freed); a window does not grow, so an allocation that does not fit
//! fails with [`Error::WindowFull`].

use std::sync::Arc;

use gpu_allocator::MemoryLocation;

use crate::error::Error;
use crate::memory::{Buffer, BUFFER_ALIGNMENT};
use crate::objects::{Device, Memory, MemoryKind, WindowInner};
use crate::ranges::FreeRanges;

/// The largest window: its offsets are 32-bit.
pub const MAX_WINDOW_BYTES: u64 = 1 << 32;

/// A window of device memory (`window.rs`'s module doc); cloning shares it.
#[derive(Clone)]
pub struct Window {
    inner: Arc<WindowInner>,
}

impl WindowInner {
    /// Returns `offset..offset + len` to the free list.
    pub(crate) fn release(&self, offset: u64, len: u64) {
        self.free.release(offset, len);
    }
}

impl Drop for WindowInner {
    fn drop(&mut self) {
        if let Some(memory) = self.memory.take() {
            memory.destroy(&self.gpu);
        }
    }
}

impl std::fmt::Debug for Window {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Window")
            .field("base", &format_args!("{:#x}", self.base()))
            .field("size", &self.size())
            .finish()
    }
}

impl Window {
    /// The device address of the window's byte 0.
    pub fn base(&self) -> u64 {
        self.inner.memory.as_ref().map_or(0, |m| m.address)
    }

    /// The window's size in bytes.
    pub fn size(&self) -> u64 {
        self.inner.memory.as_ref().map_or(0, |m| m.capacity)
    }

    /// Whether `address..address + len` lies inside the window.
    pub fn contains(&self, address: u64, len: u64) -> bool {
        address >= self.base()
            && address.checked_add(len).is_some_and(|end| end <= self.base() + self.size())
    }
}

impl Device {
    /// Creates a window of `size` bytes (at most 4 GiB) of device memory.
    pub fn create_window(&self, size: u64) -> Result<Window, Error> {
        if size == 0 || size > MAX_WINDOW_BYTES {
            return Err(Error::BufferTooLarge { size, max: MAX_WINDOW_BYTES });
        }
        self.shared.check_alive()?;
        let location = if self.shared.unified_memory {
            MemoryLocation::CpuToGpu
        } else {
            MemoryLocation::GpuOnly
        };
        let memory =
            Memory::allocate(&self.shared, size, location, MemoryKind::Device, "ptxvk window")?;
        let usable = memory.capacity / BUFFER_ALIGNMENT * BUFFER_ALIGNMENT;
        let inner = WindowInner {
            gpu: Arc::clone(&self.shared.gpu),
            memory: Some(memory),
            free: FreeRanges::new(usable),
        };
        Ok(Window { inner: Arc::new(inner) })
    }

    /// A zero-filled buffer of `size` bytes inside `window`.
    pub fn alloc_in(&self, window: &Window, size: u64) -> Result<Buffer, Error> {
        let len = size.max(1).next_multiple_of(BUFFER_ALIGNMENT);
        let offset =
            window.inner.free.take(len).ok_or(Error::WindowFull { size, window: window.size() })?;
        let Some(parent) = window.inner.memory.as_ref() else {
            return Err(Error::WindowFull { size, window: 0 });
        };
        let memory = parent.window_range(Arc::clone(&window.inner), offset, len);
        let buffer = Buffer::wrap(&self.shared, memory, size, None);
        self.zero(&buffer)?;
        self.maybe_track(&buffer)?;
        Ok(buffer)
    }
}
