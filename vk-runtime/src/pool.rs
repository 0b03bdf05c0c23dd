//! Stream-ordered memory pools (`cuMemAllocAsync`, `cuMemFreeAsync`, `cuMemPool*`).
//!
//! A pool keeps the memory of freed allocations for reuse. [`Stream::free_async`] hands
//! the buffer to the stream, which holds it until the stream has passed every earlier use;
//! only then does the memory return to the pool, so an allocation on any stream may reuse
//! it at once. Memory the pool holds beyond its release threshold goes back to the device
//! when a stream or the device synchronises (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`, default
//! 0: everything, as in CUDA).
//!
//! [`Stream::free_async`]: crate::Stream::free_async

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use crate::error::Error;
use crate::memory::Buffer;
use crate::objects::{Device, DeviceShared, Gpu, Memory, PoolInner};

impl PoolInner {
    fn free_list(&self) -> std::sync::MutexGuard<'_, Vec<Memory>> {
        self.free.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes back the memory of a dropped buffer.
    pub(crate) fn give_back(&self, memory: Memory, gpu: &Gpu) {
        self.used.fetch_sub(memory.capacity, Ordering::Relaxed);
        if self.closed.load(Ordering::Acquire) {
            self.reserved.fetch_sub(memory.capacity, Ordering::Relaxed);
            memory.destroy(gpu);
        } else {
            self.free_list().push(memory);
        }
    }

    /// The smallest held block of at least `size` bytes and at most twice that (so a
    /// small request does not pin a large block).
    fn take(&self, size: u64) -> Option<Memory> {
        let mut free = self.free_list();
        let want = size.max(1);
        let best = free
            .iter()
            .enumerate()
            .filter(|(_, m)| m.capacity >= want && m.capacity <= want.saturating_mul(2).max(64))
            .min_by_key(|(_, m)| m.capacity)
            .map(|(i, _)| i)?;
        Some(free.swap_remove(best))
    }

    fn note_used(&self, capacity: u64, fresh: bool) {
        let used = self.used.fetch_add(capacity, Ordering::Relaxed) + capacity;
        self.used_high.fetch_max(used, Ordering::Relaxed);
        if fresh {
            let reserved = self.reserved.fetch_add(capacity, Ordering::Relaxed) + capacity;
            self.reserved_high.fetch_max(reserved, Ordering::Relaxed);
        }
    }

    /// Releases held memory until at most the release threshold remains held.
    pub(crate) fn trim(&self, gpu: &Gpu, keep: u64) {
        let mut free = self.free_list();
        let mut held: u64 = free.iter().map(|m| m.capacity).sum();
        free.sort_by_key(|m| m.capacity);
        while held > keep {
            let Some(memory) = free.pop() else { break };
            held -= memory.capacity;
            self.reserved.fetch_sub(memory.capacity, Ordering::Relaxed);
            memory.destroy(gpu);
        }
    }

    pub(crate) fn trim_to_threshold(&self, gpu: &Gpu) {
        self.trim(gpu, self.release_threshold.load(Ordering::Relaxed));
    }

    /// Releases everything held and makes later returns release too.
    pub(crate) fn close(&self, gpu: &Gpu) {
        self.closed.store(true, Ordering::Release);
        self.trim(gpu, 0);
    }
}

/// A memory pool for stream-ordered allocation. Dropping the handle releases the memory it
/// holds; buffers still allocated from it stay valid and release theirs when dropped.
pub struct MemPool {
    pub(crate) shared: Arc<DeviceShared>,
    pub(crate) inner: Arc<PoolInner>,
    /// The device's default pool lives as long as the device: its handle does not close
    /// it.
    is_default: bool,
}

impl fmt::Debug for MemPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemPool")
            .field("used", &self.used_bytes())
            .field("reserved", &self.reserved_bytes())
            .finish_non_exhaustive()
    }
}

impl Drop for MemPool {
    fn drop(&mut self) {
        if !self.is_default {
            self.inner.close(&self.shared.gpu);
        }
    }
}

impl MemPool {
    /// Allocates `size` bytes (not zeroed), reusing held memory when a block fits.
    pub(crate) fn allocate(&self, size: u64) -> Result<Buffer, Error> {
        self.shared.check_alive()?;
        let (memory, fresh) = match self.inner.take(size) {
            Some(memory) => (memory, false),
            None => {
                (Device { shared: Arc::clone(&self.shared) }.allocate_device_memory(size)?, true)
            }
        };
        self.inner.note_used(memory.capacity, fresh);
        let buffer = Buffer::wrap(&self.shared, memory, size, Some(Arc::clone(&self.inner)));
        Device { shared: Arc::clone(&self.shared) }.maybe_track(&buffer)?;
        Ok(buffer)
    }

    /// Bytes held free beyond which memory is released at synchronisation.
    pub fn release_threshold(&self) -> u64 {
        self.inner.release_threshold.load(Ordering::Relaxed)
    }

    /// Sets [`MemPool::release_threshold`] (`u64::MAX`: never release).
    pub fn set_release_threshold(&self, bytes: u64) {
        self.inner.release_threshold.store(bytes, Ordering::Relaxed);
    }

    /// Bytes of memory out in live allocations.
    pub fn used_bytes(&self) -> u64 {
        self.inner.used.load(Ordering::Relaxed)
    }

    /// Bytes of device memory the pool owns (in use or held for reuse).
    pub fn reserved_bytes(&self) -> u64 {
        self.inner.reserved.load(Ordering::Relaxed)
    }

    /// The highest [`MemPool::used_bytes`] so far.
    pub fn used_high_bytes(&self) -> u64 {
        self.inner.used_high.load(Ordering::Relaxed)
    }

    /// The highest [`MemPool::reserved_bytes`] so far.
    pub fn reserved_high_bytes(&self) -> u64 {
        self.inner.reserved_high.load(Ordering::Relaxed)
    }

    /// Releases held memory down to `keep` bytes (`cuMemPoolTrimTo`).
    pub fn trim_to(&self, keep: u64) {
        self.inner.trim(&self.shared.gpu, keep);
    }
}

impl Device {
    /// A new memory pool on this device (`cuMemPoolCreate`).
    pub fn create_pool(&self) -> Result<MemPool, Error> {
        self.shared.check_alive()?;
        Ok(MemPool { shared: Arc::clone(&self.shared), inner: Arc::default(), is_default: false })
    }

    /// The device's default pool (`cuDeviceGetDefaultMemPool`): what
    /// [`Stream::alloc_async`](crate::Stream::alloc_async) uses without a pool.
    pub fn default_pool(&self) -> MemPool {
        MemPool {
            shared: Arc::clone(&self.shared),
            inner: Arc::clone(&self.shared.default_pool),
            is_default: true,
        }
    }
}
