//! A stream's copies and memsets (`cuMemcpy*`, `cuMemset*`): between buffers, from the
//! host (staged in the stream's arena, so the caller's bytes may be reused at once) and
//! to it (through a staging buffer, or straight from the mapping of host-visible
//! memory), pitched 3-D regions, and fills with 8-, 16- and 32-bit patterns. Each is
//! one operation of the stream's open batch (`stream.rs`).

use std::any::Any;
use std::sync::Arc;

use ash::vk;
use gpu_allocator::MemoryLocation;

use super::{barrier, keep, Stream};
use crate::error::Error;
use crate::memory::Buffer;
use crate::objects::{Batch, Chunk};
use crate::region::{BufferRegion, Extent3d, HostLayout};
use crate::types::Pattern;

impl Stream {
    /// Copies `data` to `dst` at `offset` in stream order. The bytes are staged now, so the
    /// caller may reuse `data` at once (`cuMemcpyHtoDAsync`).
    pub fn copy_to_buffer(&self, dst: &Buffer, offset: u64, data: &[u8]) -> Result<(), Error> {
        self.check_device(dst.device_id(), "buffer")?;
        dst.check_range("upload", offset, data.len() as u64)?;
        if data.is_empty() {
            return Ok(());
        }
        let (shared, gpu) = (&self.shared, &self.shared.gpu);
        self.enqueue(|dev, batch, arena| {
            let (staging, at) = arena.put(gpu, shared, data, 16)?;
            let region = vk::BufferCopy {
                src_offset: at,
                dst_offset: dst.memory().raw_offset + offset,
                size: data.len() as u64,
            };
            copy(dev, batch, staging.memory().raw, dst.memory().raw, &[region]);
            batch.keep.push(staging);
            keep(batch, dst);
            Ok(())
        })?;
        dst.mark_written(offset, data.len() as u64);
        Ok(())
    }

    /// Copies `len` bytes from `src` at `src_offset` to `dst` at `dst_offset` in stream
    /// order (`cuMemcpyDtoDAsync`). Overlapping ranges of one allocation are copied as
    /// `memmove` copies them.
    pub fn copy_buffer(
        &self,
        src: &Buffer,
        src_offset: u64,
        dst: &Buffer,
        dst_offset: u64,
        len: u64,
    ) -> Result<(), Error> {
        self.check_device(src.device_id(), "buffer")?;
        self.check_device(dst.device_id(), "buffer")?;
        src.check_range("copy", src_offset, len)?;
        dst.check_range("upload", dst_offset, len)?;
        if len == 0 {
            return Ok(());
        }
        let overlap = src.same_allocation(dst)
            && src_offset < dst_offset + len
            && dst_offset < src_offset + len;
        let (src_at, dst_at) =
            (src.memory().raw_offset + src_offset, dst.memory().raw_offset + dst_offset);
        let (shared, gpu) = (&self.shared, &self.shared.gpu);
        self.enqueue(|dev, batch, _| {
            if overlap {
                // Vulkan forbids overlapping regions in one copy (VUID-vkCmdCopyBuffer-
                // pRegions-00117); CUDA copies such ranges as memmove does, and programs
                // rely on it (Warp's in-place array shifts): through a temporary.
                let temp = Chunk::device(gpu, shared, len)?;
                let raw = temp.memory().raw;
                let there = vk::BufferCopy {
                    src_offset: src_at,
                    dst_offset: temp.memory().raw_offset,
                    size: len,
                };
                let back = vk::BufferCopy {
                    src_offset: temp.memory().raw_offset,
                    dst_offset: dst_at,
                    size: len,
                };
                copy(dev, batch, src.memory().raw, raw, &[there]);
                barrier(dev, batch.cmd);
                copy(dev, batch, raw, dst.memory().raw, &[back]);
                batch.keep.push(temp);
            } else {
                let region = vk::BufferCopy { src_offset: src_at, dst_offset: dst_at, size: len };
                copy(dev, batch, src.memory().raw, dst.memory().raw, &[region]);
            }
            keep(batch, src);
            keep(batch, dst);
            Ok(())
        })?;
        dst.mark_written(dst_offset, len);
        Ok(())
    }

    /// Sets `len` bytes of `dst` from `offset` to repetitions of `pattern`, in stream order
    /// (`cuMemsetD8/16/32Async`). `offset` and `len` must be multiples of the pattern size.
    pub fn memset(
        &self,
        dst: &Buffer,
        offset: u64,
        len: u64,
        pattern: Pattern,
    ) -> Result<(), Error> {
        self.check_device(dst.device_id(), "buffer")?;
        dst.check_range("memset", offset, len)?;
        let size = pattern.size();
        if !offset.is_multiple_of(size) || !len.is_multiple_of(size) {
            return Err(Error::InvalidUse(format!(
                "a {}-bit memset needs an offset and length that are multiples of {size} bytes \
                 (got offset {offset}, length {len})",
                size * 8
            )));
        }
        if len == 0 {
            return Ok(());
        }
        // vkCmdFillBuffer needs 4-byte aligned offsets and sizes (Vulkan §20.4): the
        // aligned middle is filled, the up to 3 bytes at either end are copied from staged
        // pattern bytes (vkCmdCopyBuffer has no alignment rule).
        let base = dst.memory().raw_offset;
        let (start, end) = (base + offset, base + offset + len);
        let middle_start = start.next_multiple_of(4).min(end);
        let middle_end = (end / 4 * 4).max(middle_start);
        let word = pattern.word_bytes();
        // Byte `a` of the buffer holds pattern byte `(a - start) % size`; `start` is a
        // multiple of the size, so the word at a 4-aligned address is `word` itself.
        let byte_at = |a: u64| word[((a - start) % size) as usize];
        let edges: Vec<(u64, Vec<u8>)> = [(start, middle_start), (middle_end, end)]
            .into_iter()
            .filter(|(a, b)| b > a)
            .map(|(a, b)| (a, (a..b).map(byte_at).collect()))
            .collect();
        let (shared, gpu) = (&self.shared, &self.shared.gpu);
        self.enqueue(|dev, batch, arena| {
            if middle_end > middle_start {
                // SAFETY: `batch.cmd` is recording; the buffer is alive (kept below), has
                // TRANSFER_DST usage, and the range is 4-byte aligned inside it.
                unsafe {
                    dev.cmd_fill_buffer(
                        batch.cmd,
                        dst.memory().raw,
                        middle_start,
                        middle_end - middle_start,
                        u32::from_le_bytes(word),
                    )
                };
            }
            for (at, bytes) in &edges {
                let (staging, from) = arena.put(gpu, shared, bytes, 4)?;
                let region =
                    vk::BufferCopy { src_offset: from, dst_offset: *at, size: bytes.len() as u64 };
                copy(dev, batch, staging.memory().raw, dst.memory().raw, &[region]);
                batch.keep.push(staging);
            }
            keep(batch, dst);
            Ok(())
        })?;
        dst.mark_written(offset, len);
        Ok(())
    }

    /// Copies a pitched 3-D region between buffers in stream order (`cuMemcpy3DAsync`
    /// between device or host-registered memory).
    pub fn copy_3d(
        &self,
        src: BufferRegion<'_>,
        dst: BufferRegion<'_>,
        extent: Extent3d,
    ) -> Result<(), Error> {
        self.check_device(src.buffer.device_id(), "buffer")?;
        self.check_device(dst.buffer.device_id(), "buffer")?;
        let from = src.rows("3-D copy source", extent)?;
        let to = dst.rows("3-D copy destination", extent)?;
        if from.is_empty() {
            return Ok(());
        }
        let (sb, db) = (src.buffer.memory().raw_offset, dst.buffer.memory().raw_offset);
        let regions: Vec<vk::BufferCopy> = from
            .iter()
            .zip(&to)
            .map(|(&s, &d)| vk::BufferCopy {
                src_offset: sb + s,
                dst_offset: db + d,
                size: extent.width,
            })
            .collect();
        self.enqueue(|dev, batch, _| {
            copy(dev, batch, src.buffer.memory().raw, dst.buffer.memory().raw, &regions);
            keep(batch, src.buffer);
            keep(batch, dst.buffer);
            Ok(())
        })?;
        to.iter().for_each(|&row| dst.buffer.mark_written(row, extent.width));
        Ok(())
    }

    /// Copies a pitched 3-D region of host memory into a buffer in stream order; the rows
    /// are staged now, so `data` may be reused at once.
    pub fn copy_3d_from_host(
        &self,
        data: &[u8],
        layout: HostLayout,
        dst: BufferRegion<'_>,
        extent: Extent3d,
    ) -> Result<(), Error> {
        self.check_device(dst.buffer.device_id(), "buffer")?;
        let from = layout.rows("3-D copy source", extent, data.len() as u64)?;
        let to = dst.rows("3-D copy destination", extent)?;
        if from.is_empty() {
            return Ok(());
        }
        let packed: Vec<u8> = from
            .iter()
            .flat_map(|&s| &data[s as usize..(s + extent.width) as usize])
            .copied()
            .collect();
        let (shared, gpu) = (&self.shared, &self.shared.gpu);
        let db = dst.buffer.memory().raw_offset;
        self.enqueue(|dev, batch, arena| {
            let (staging, sb) = arena.put(gpu, shared, &packed, 16)?;
            let regions: Vec<vk::BufferCopy> = to
                .iter()
                .enumerate()
                .map(|(i, &d)| vk::BufferCopy {
                    src_offset: sb + i as u64 * extent.width,
                    dst_offset: db + d,
                    size: extent.width,
                })
                .collect();
            copy(dev, batch, staging.memory().raw, dst.buffer.memory().raw, &regions);
            batch.keep.push(staging);
            keep(batch, dst.buffer);
            Ok(())
        })?;
        to.iter().for_each(|&row| dst.buffer.mark_written(row, extent.width));
        Ok(())
    }

    /// Copies a pitched 3-D region of a buffer into host memory once the stream reaches
    /// this point, and waits for it (`cuMemcpy3D` to host).
    pub fn copy_3d_to_host(
        &self,
        src: BufferRegion<'_>,
        out: &mut [u8],
        layout: HostLayout,
        extent: Extent3d,
    ) -> Result<(), Error> {
        self.check_device(src.buffer.device_id(), "buffer")?;
        let from = src.rows("3-D copy source", extent)?;
        let to = layout.rows("3-D copy destination", extent, out.len() as u64)?;
        if from.is_empty() {
            return Ok(());
        }
        let width = extent.width as usize;
        if src.buffer.is_host_visible() {
            self.wait_all_before()?;
            for (&s, &d) in from.iter().zip(&to) {
                src.buffer.read_mapped(s, &mut out[d as usize..d as usize + width])?;
            }
            return Ok(());
        }
        let regions: Vec<vk::BufferCopy> = from
            .iter()
            .enumerate()
            .map(|(i, &s)| vk::BufferCopy {
                src_offset: src.buffer.memory().raw_offset + s,
                dst_offset: i as u64 * extent.width,
                size: extent.width,
            })
            .collect();
        let staging = self.stage_out(src.buffer, extent.width * from.len() as u64, &regions)?;
        for (i, &d) in to.iter().enumerate() {
            staging
                .memory()
                .read_mapped(i as u64 * extent.width, &mut out[d as usize..d as usize + width])?;
        }
        Ok(())
    }

    /// Records copies from `src` (`regions`' destinations are offsets in a new
    /// host-readable staging buffer of `len` bytes), waits for them, and returns the
    /// staging memory.
    fn stage_out(
        &self,
        src: &Buffer,
        len: u64,
        regions: &[vk::BufferCopy],
    ) -> Result<Arc<Chunk>, Error> {
        let staging = Chunk::new(&self.shared.gpu, &self.shared, len, MemoryLocation::GpuToCpu)?;
        self.enqueue(|dev, batch, _| {
            copy(dev, batch, src.memory().raw, staging.memory().raw, regions);
            batch.keep.push(Arc::clone(&staging) as Arc<dyn Any + Send + Sync>);
            keep(batch, src);
            Ok(())
        })?;
        self.flush_and_wait()?;
        Ok(staging)
    }

    /// Copies `out.len()` bytes of `src` from `offset` to the host once the stream reaches
    /// this point, and waits (`cuMemcpyDtoH`): straight from the mapping when the memory
    /// is host-visible, else through a staging buffer.
    pub fn copy_from_buffer(&self, src: &Buffer, offset: u64, out: &mut [u8]) -> Result<(), Error> {
        self.check_device(src.device_id(), "buffer")?;
        src.check_range("download", offset, out.len() as u64)?;
        if out.is_empty() {
            return Ok(());
        }
        if src.is_host_visible() {
            self.wait_all_before()?;
            return src.read_mapped(offset, out);
        }
        let len = out.len() as u64;
        let region = vk::BufferCopy {
            src_offset: src.memory().raw_offset + offset,
            dst_offset: 0,
            size: len,
        };
        let staging = self.stage_out(src, len, &[region])?;
        staging.memory().read_mapped(0, out)
    }

    /// Copies `data` into `dst` at `offset` once the stream reaches this point, and waits
    /// (`cuMemcpyHtoD`): straight into the mapping when the memory is host-visible.
    pub fn copy_to_buffer_sync(&self, dst: &Buffer, offset: u64, data: &[u8]) -> Result<(), Error> {
        self.check_device(dst.device_id(), "buffer")?;
        dst.check_range("upload", offset, data.len() as u64)?;
        if dst.is_host_visible() {
            self.wait_all_before()?;
            return dst.write_mapped(offset, data);
        }
        self.copy_to_buffer(dst, offset, data)?;
        self.flush_and_wait()
    }
}

/// Records a buffer copy; the caller keeps both buffers alive with the batch.
fn copy(
    dev: &ash::Device,
    batch: &Batch,
    src: vk::Buffer,
    dst: vk::Buffer,
    regions: &[vk::BufferCopy],
) {
    // SAFETY: `batch.cmd` is recording; both buffers are alive (the caller makes the batch
    // keep them) with TRANSFER usage; every region was bounds-checked by the caller.
    unsafe { dev.cmd_copy_buffer(batch.cmd, src, dst, regions) };
}
