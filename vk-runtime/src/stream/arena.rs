//! A stream's arena: host-visible memory for parameter blocks and staged uploads,
//! bump-allocated in chunks of [`ARENA_CHUNK`] bytes and reused once no pending batch
//! holds them, one-off staging buffers for larger pieces, and the device-memory area of
//! shared windows kept in device memory (the types are in `objects.rs`).

use std::sync::Arc;

use gpu_allocator::MemoryLocation;

use crate::error::Error;
use crate::objects::{Arena, Chunk, DeviceShared, Gpu, Memory, MemoryKind};

/// Size of one arena chunk (parameter blocks and staged uploads).
const ARENA_CHUNK: u64 = 1 << 20;

/// Uploads larger than this get a staging buffer of their own instead of arena space.
const ARENA_MAX_PIECE: u64 = ARENA_CHUNK / 4;

impl Chunk {
    pub(super) fn new(
        gpu: &Arc<Gpu>,
        shared: &DeviceShared,
        len: u64,
        location: MemoryLocation,
    ) -> Result<Arc<Chunk>, Error> {
        let memory = Memory::allocate(shared, len, location, MemoryKind::Host, "ptxvk staging")?;
        Ok(Arc::new(Chunk { gpu: Arc::clone(gpu), memory: Some(memory) }))
    }

    /// Device memory nothing but kernels touch.
    pub(super) fn device(
        gpu: &Arc<Gpu>,
        shared: &DeviceShared,
        len: u64,
    ) -> Result<Arc<Chunk>, Error> {
        let location =
            if shared.unified_memory { MemoryLocation::CpuToGpu } else { MemoryLocation::GpuOnly };
        let memory =
            Memory::allocate(shared, len, location, MemoryKind::Device, "ptxvk shared windows")?;
        Ok(Arc::new(Chunk { gpu: Arc::clone(gpu), memory: Some(memory) }))
    }

    pub(super) fn memory(&self) -> &Memory {
        // Only `drop` takes the memory out.
        self.memory.as_ref().unwrap_or_else(|| unreachable!("chunk memory taken"))
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        if let Some(memory) = self.memory.take() {
            // The last handle is gone: no pending batch uses the chunk.
            memory.destroy(&self.gpu);
        }
    }
}

impl Arena {
    /// Space for `data` aligned to `align`, filled with it: the chunk and the offset.
    pub(super) fn put(
        &mut self,
        gpu: &Arc<Gpu>,
        shared: &DeviceShared,
        data: &[u8],
        align: u64,
    ) -> Result<(Arc<Chunk>, u64), Error> {
        let (chunk, at) = self.place(gpu, shared, data.len() as u64, align)?;
        chunk.memory().write_mapped(at, data)?;
        Ok((chunk, at))
    }

    /// `len` bytes of device memory for the shared windows of one launch. The launches
    /// of a stream run one after the other (a barrier between them), so each reuses the
    /// stream's area; a larger one replaces it, and batches still running keep the old
    /// one alive.
    pub(super) fn shared_windows(
        &mut self,
        gpu: &Arc<Gpu>,
        shared: &DeviceShared,
        len: u64,
    ) -> Result<Arc<Chunk>, Error> {
        match &self.shared_windows {
            Some((area, size)) if *size >= len => Ok(Arc::clone(area)),
            _ => {
                let area = Chunk::device(gpu, shared, len)?;
                self.shared_windows = Some((Arc::clone(&area), len));
                Ok(area)
            }
        }
    }

    fn place(
        &mut self,
        gpu: &Arc<Gpu>,
        shared: &DeviceShared,
        len: u64,
        align: u64,
    ) -> Result<(Arc<Chunk>, u64), Error> {
        if len > ARENA_MAX_PIECE {
            return Ok((Chunk::new(gpu, shared, len, MemoryLocation::CpuToGpu)?, 0));
        }
        if let Some((chunk, used)) = &mut self.current {
            let at = used.next_multiple_of(align);
            if at + len <= ARENA_CHUNK {
                *used = at + len;
                return Ok((Arc::clone(chunk), at));
            }
        }
        // The current chunk is full: retire it and take one no batch holds any more.
        if let Some((chunk, _)) = self.current.take() {
            self.retired.push(chunk);
        }
        let reusable = self.retired.iter().position(|c| Arc::strong_count(c) == 1);
        let chunk = match reusable {
            Some(i) => self.retired.swap_remove(i),
            None => Chunk::new(gpu, shared, ARENA_CHUNK, MemoryLocation::CpuToGpu)?,
        };
        self.current = Some((Arc::clone(&chunk), len));
        Ok((chunk, 0))
    }
}
