//! Context-local storage: the values NVIDIA's runtime keeps per context through the
//! driver's private table (`export_table.rs`, slots 0 to 2), and their destructors, run
//! when the context goes (`cuCtxDestroy`, `cuDevicePrimaryCtxReset`, in `device.rs`).

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::{Mutex, PoisonError};

use crate::trace::trace;

/// A destructor the runtime registers with a value: called with the context, the key
/// and the value when the context goes.
pub(crate) type Destructor = unsafe extern "C" fn(usize, *mut c_void, *mut c_void);

/// A stored value and its destructor.
pub(crate) type Stored = (usize, Option<Destructor>);

/// Values by (context, key), with their destructors.
pub(crate) static STORAGE: Mutex<BTreeMap<(usize, usize), Stored>> = Mutex::new(BTreeMap::new());

/// Runs and forgets the destructors of `ctx`'s values (`cuCtxDestroy`,
/// `cuDevicePrimaryCtxReset`).
pub(crate) fn context_gone(ctx: usize) {
    let gone: Vec<((usize, usize), Stored)> = {
        let mut s = STORAGE.lock().unwrap_or_else(PoisonError::into_inner);
        let keys: Vec<(usize, usize)> =
            s.range((ctx, 0)..=(ctx, usize::MAX)).map(|(k, _)| *k).collect();
        keys.into_iter().filter_map(|k| s.remove(&k).map(|v| (k, v))).collect()
    };
    for ((ctx, key), (value, dtor)) in gone {
        if let Some(dtor) = dtor {
            trace!("context-local storage destructor ctx={ctx:#x} key={key:#x}");
            // SAFETY: the runtime registered `dtor` for this value and context.
            unsafe { dtor(ctx, key as *mut c_void, value as *mut c_void) };
        }
    }
}
