//! Confinement of kernels on devices that run inside this process (`docs/status.md`,
//! *Security*).
//!
//! A CPU device such as lavapipe runs kernels on the host's threads, with device
//! addresses that are host pointers: a wild global pointer in an unchecked kernel reads
//! or writes whatever the process has there. So that a kernel can reach only the
//! memory ptxvk gave it, every allocation of such a device comes from one range of
//! address space reserved when the device opens: `mmap` of `PROT_READ | PROT_WRITE`
//! with `MAP_NORESERVE`, which costs no memory until pages are touched. Each allocation
//! is a page-aligned piece of it, imported as its own `VkDeviceMemory` through
//! `VK_EXT_external_memory_host` (Vulkan 1.3 §11.2.8, "Host External Memory"), so that
//! every buffer still obeys `maxMemoryAllocationSize`. A freed piece's pages go back to
//! the system (`madvise(MADV_DONTNEED)`, after which they read as zero).
//!
//! The compiler then tests every global access of an unchecked kernel against the
//! range (`ptxvk_lower::pass::check`, confinement), and only what lies outside it
//! (registered host memory, memory imported from another process) against the
//! launch's allocation table.

use std::ptr::NonNull;

use crate::error::Error;
use crate::ranges::FreeRanges;

/// The environment variable that turns confinement off (`0`) for those who measure
/// without it; on (`1`, the default) confines kernels of CPU devices.
pub const ENV_CONFINE: &str = "PTXVK_CONFINE";

/// Granularity of pieces: the host page, which is lavapipe's
/// `minImportedHostPointerAlignment` too (a larger device alignment is honoured).
const PAGE: u64 = 4096;

/// The reserved address range of one device, and which pieces of it are in use.
#[derive(Debug)]
pub(crate) struct Reservation {
    base: NonNull<u8>,
    size: u64,
    /// The piece granularity: the page, or the device's import alignment if larger.
    align: u64,
    free: FreeRanges,
}

// SAFETY: the reservation is a mapping of this process that lives until drop; the
// pointer is only offset and handed to Vulkan imports, never dereferenced here.
unsafe impl Send for Reservation {}
// SAFETY: as above; the free list has its own lock.
unsafe impl Sync for Reservation {}

impl Reservation {
    /// Reserves `size` bytes (rounded up to the granularity) of address space, with
    /// pieces aligned to `import_alignment` (at least a page).
    pub(crate) fn new(size: u64, import_alignment: u64) -> Result<Reservation, Error> {
        let align = import_alignment.max(PAGE).next_power_of_two();
        let size = size.next_multiple_of(align);
        let len = usize::try_from(size)
            .map_err(|_| Error::OutOfMemory(format!("cannot reserve {size} bytes")))?;
        // SAFETY: an anonymous private mapping at an address the kernel chooses; it
        // overlaps nothing, and is unmapped only on drop.
        let mapped = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if mapped == libc::MAP_FAILED {
            let why = std::io::Error::last_os_error();
            return Err(Error::OutOfMemory(format!(
                "cannot reserve {size} bytes of address space to confine kernels in ({why}); \
                 set {ENV_CONFINE}=0 to run them unconfined"
            )));
        }
        let base = NonNull::new(mapped.cast::<u8>())
            .ok_or_else(|| Error::OutOfMemory("mmap returned a null mapping".into()))?;
        Ok(Reservation { base, size, align, free: FreeRanges::new(size) })
    }

    /// The first address of the range.
    pub(crate) fn start(&self) -> u64 {
        self.base.as_ptr() as u64
    }

    /// Bytes in the range.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// A piece of at least `len` bytes: its host pointer and its length (a multiple of
    /// the granularity), or `None` when no free piece is large enough.
    pub(crate) fn take(&self, len: u64) -> Option<(NonNull<u8>, u64)> {
        let len = len.max(1).checked_next_multiple_of(self.align)?;
        let offset = self.free.take(len)?;
        // SAFETY: `offset + len <= size`: the free list hands out pieces of the range.
        let ptr = unsafe { self.base.add(offset as usize) };
        Some((ptr, len))
    }

    /// Returns a piece [`Reservation::take`] gave, its pages to the system: read again,
    /// they are zero.
    ///
    /// # Safety
    /// Nothing may use the piece any more (its `VkDeviceMemory` is freed).
    pub(crate) unsafe fn release(&self, ptr: NonNull<u8>, len: u64) {
        let offset = ptr.as_ptr() as u64 - self.start();
        // SAFETY: the piece lies inside the mapping (it came from `take`) and nothing
        // uses it (function contract); dropping its pages keeps the mapping.
        unsafe { libc::madvise(ptr.as_ptr().cast(), len as usize, libc::MADV_DONTNEED) };
        self.free.release(offset, len);
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        // SAFETY: the mapping is this reservation's; every piece's memory was freed
        // before the device (which owns the reservation) is torn down.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.size as usize) };
    }
}

/// Whether kernels of a device of type `device_type` are to be confined: CPU devices,
/// unless [`ENV_CONFINE`] is `0`.
pub(crate) fn wanted(device_type: crate::DeviceType) -> Result<bool, Error> {
    if device_type != crate::DeviceType::Cpu {
        return Ok(false);
    }
    match std::env::var(ENV_CONFINE).as_deref().map(str::trim) {
        Err(_) | Ok("") | Ok("1") | Ok("on") => Ok(true),
        Ok("0") | Ok("off") => Ok(false),
        Ok(other) => Err(Error::Env {
            var: ENV_CONFINE,
            value: other.to_string(),
            reason: "expected 1 (confine kernels, the default) or 0".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::Reservation;

    #[test]
    fn pieces_are_aligned_inside_and_zero_after_release() {
        let r = Reservation::new(1 << 30, 4096).expect("reserve 1 GiB");
        let (a, len) = r.take(10).expect("a piece");
        assert_eq!(len, 4096);
        assert!((r.start()..r.start() + r.size()).contains(&(a.as_ptr() as u64)));
        assert_eq!(a.as_ptr() as u64 % 4096, 0);
        // SAFETY: the piece is mapped read-write and ours alone.
        unsafe { a.as_ptr().write(7) };
        // SAFETY: nothing uses the piece.
        unsafe { r.release(a, len) };
        let (b, _) = r.take(10).expect("the same piece again");
        assert_eq!(a, b);
        // SAFETY: as above.
        assert_eq!(unsafe { b.as_ptr().read() }, 0);
        assert!(r.take(2 << 30).is_none());
    }
}
