//! Handle tables: the opaque pointers the API hands out (`CUcontext`, `CUmodule`,
//! `CUstream`, ...) are numbers looked up here, never dereferenced, so a bad, stale or
//! foreign handle is an error code instead of a crash.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Handles of every kind come from one counter, spaced so that they are never small
/// integers (0, 1 and 2 are CUDA's special stream handles) and never confused across
/// kinds.
static NEXT: AtomicUsize = AtomicUsize::new(1);

/// Objects of one kind by handle.
pub(crate) struct Table<T> {
    map: Mutex<BTreeMap<usize, Arc<T>>>,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Table { map: Mutex::new(BTreeMap::new()) }
    }
}

impl<T> Table<T> {
    fn map(&self) -> std::sync::MutexGuard<'_, BTreeMap<usize, Arc<T>>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stores `value` and returns its new handle.
    pub(crate) fn insert(&self, value: T) -> usize {
        self.insert_arc(Arc::new(value))
    }

    /// Stores a shared `value` and returns its new handle.
    pub(crate) fn insert_arc(&self, value: Arc<T>) -> usize {
        let handle = 0x1000 + NEXT.fetch_add(1, Ordering::Relaxed) * 16;
        self.map().insert(handle, value);
        handle
    }

    pub(crate) fn get(&self, handle: usize) -> Option<Arc<T>> {
        self.map().get(&handle).cloned()
    }

    pub(crate) fn remove(&self, handle: usize) -> Option<Arc<T>> {
        self.map().remove(&handle)
    }

    /// Stores `value` under an existing `handle` (a new one when it had none).
    pub(crate) fn replace(&self, handle: usize, value: T) {
        self.map().insert(handle, Arc::new(value));
    }

    /// Keeps only the handles `keep` accepts.
    pub(crate) fn retain(&self, keep: impl Fn(usize) -> bool) {
        self.map().retain(|&h, _| keep(h));
    }

    /// Forgets every handle.
    pub(crate) fn clear(&self) {
        self.map().clear();
    }
}
