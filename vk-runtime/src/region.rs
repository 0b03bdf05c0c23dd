//! Pitched 3-D regions of copies (`CUDA_MEMCPY3D`): in a buffer, in host memory, and
//! their extent, with the row offsets a copy visits, checked against the memory's size.

use crate::error::Error;
use crate::memory::Buffer;

/// A pitched 3-D region in a buffer: rows of `pitch` bytes, `rows_per_slice` rows per
/// slice, starting `offset` bytes into the buffer (`CUDA_MEMCPY3D`).
#[derive(Clone, Copy, Debug)]
pub struct BufferRegion<'a> {
    /// The buffer.
    pub buffer: &'a Buffer,
    /// Byte offset of the region's first byte.
    pub offset: u64,
    /// Bytes from one row to the next.
    pub pitch: u64,
    /// Rows from one slice to the next.
    pub rows_per_slice: u64,
}

impl BufferRegion<'_> {
    /// The byte offset of every row of `extent` in the buffer (see
    /// [`Extent3d::row_offsets`]).
    pub(crate) fn rows(&self, what: &'static str, extent: Extent3d) -> Result<Vec<u64>, Error> {
        extent.row_offsets(what, self.offset, self.pitch, self.rows_per_slice, self.buffer.size())
    }
}

/// The layout of a pitched region in host memory (as [`BufferRegion`], for host slices).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostLayout {
    /// Byte offset of the region's first byte.
    pub offset: u64,
    /// Bytes from one row to the next.
    pub pitch: u64,
    /// Rows from one slice to the next.
    pub rows_per_slice: u64,
}

impl HostLayout {
    /// The byte offset of every row of `extent` in host memory of `len` bytes.
    pub(crate) fn rows(
        &self,
        what: &'static str,
        extent: Extent3d,
        len: u64,
    ) -> Result<Vec<u64>, Error> {
        extent.row_offsets(what, self.offset, self.pitch, self.rows_per_slice, len)
    }
}

/// The size of a 3-D copy: `width` bytes per row, `height` rows, `depth` slices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent3d {
    /// Bytes per row.
    pub width: u64,
    /// Rows per slice.
    pub height: u64,
    /// Slices.
    pub depth: u64,
}

impl Extent3d {
    /// A 2-D extent (one slice).
    pub fn rows(width: u64, height: u64) -> Extent3d {
        Extent3d { width, height, depth: 1 }
    }

    fn rows_total(&self) -> u64 {
        self.height.saturating_mul(self.depth)
    }

    /// Byte offsets of every row of a region with this layout, in (slice, row) order;
    /// checks that rows fit their pitch and the region fits `size` bytes.
    fn row_offsets(
        &self,
        what: &'static str,
        offset: u64,
        pitch: u64,
        rows_per_slice: u64,
        size: u64,
    ) -> Result<Vec<u64>, Error> {
        if self.width == 0 || self.height == 0 || self.depth == 0 {
            return Ok(Vec::new());
        }
        if self.width > pitch || (self.depth > 1 && self.height > rows_per_slice) {
            return Err(Error::InvalidUse(format!(
                "the {what} rows of {} bytes x {} rows do not fit a pitch of {pitch} bytes and \
                 {rows_per_slice} rows per slice",
                self.width, self.height
            )));
        }
        let slice = pitch.checked_mul(rows_per_slice);
        let last = slice
            .and_then(|s| s.checked_mul(self.depth - 1))
            .and_then(|z| z.checked_add(pitch.checked_mul(self.height - 1)?))
            .and_then(|o| o.checked_add(offset)?.checked_add(self.width));
        match last {
            Some(end) if end <= size => {}
            _ => return Err(Error::OutOfBounds { op: what, offset, len: self.width, size }),
        }
        let slice = slice.unwrap_or(0);
        let mut rows = Vec::with_capacity(self.rows_total() as usize);
        for z in 0..self.depth {
            for y in 0..self.height {
                rows.push(offset + z * slice + y * pitch);
            }
        }
        Ok(rows)
    }
}
