//! A first-fit list of free byte ranges, coalesced when ranges return: the
//! sub-allocator of a [`crate::Window`] and of the confinement reservation
//! (`crate::reservation`).

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

/// Free ranges of one region: offset → length.
#[derive(Debug)]
pub(crate) struct FreeRanges {
    free: Mutex<BTreeMap<u64, u64>>,
}

impl FreeRanges {
    /// A region of `len` bytes, all free.
    pub(crate) fn new(len: u64) -> FreeRanges {
        let free = if len == 0 { BTreeMap::new() } else { BTreeMap::from([(0, len)]) };
        FreeRanges { free: Mutex::new(free) }
    }

    /// First fit of `len` bytes: the offset, removed from the free list.
    pub(crate) fn take(&self, len: u64) -> Option<u64> {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        let (&offset, &have) = free.iter().find(|(_, &l)| l >= len)?;
        free.remove(&offset);
        if have > len {
            free.insert(offset + len, have - len);
        }
        Some(offset)
    }

    /// Returns `offset..offset + len` to the free list, merged with its neighbours.
    pub(crate) fn release(&self, offset: u64, len: u64) {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        let (mut start, mut end) = (offset, offset + len);
        if let Some((&o, &l)) = free.range(..start).next_back() {
            if o + l == start {
                start = o;
                free.remove(&o);
            }
        }
        if let Some(l) = free.remove(&end) {
            end += l;
        }
        free.insert(start, end - start);
    }
}

#[cfg(test)]
mod tests {
    use super::FreeRanges;

    #[test]
    fn first_fit_and_coalescing() {
        let r = FreeRanges::new(100);
        assert_eq!(r.take(30), Some(0));
        assert_eq!(r.take(30), Some(30));
        assert_eq!(r.take(50), None);
        r.release(0, 30);
        assert_eq!(r.take(40), Some(60));
        r.release(30, 30);
        // 0..60 coalesced: a 60-byte request fits at 0.
        assert_eq!(r.take(60), Some(0));
        assert_eq!(r.take(1), None);
    }
}
