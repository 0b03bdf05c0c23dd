//! User objects (`cuUserObjectCreate`, `cuGraphRetainUserObject`): a client's pointer and
//! destructor, called once the last reference to it is released.

use super::*;
use crate::objects::UserObject;

// User objects.

/// Adds `count` references to user object `object`.
pub(super) fn retain_user_object(object: usize, count: c_uint) -> Result<(), CUresult> {
    let d = driver()?;
    let o = d.user_objects.get(object).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
    let mut refs = lock(&o.refs);
    *refs = refs.checked_add(count).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    Ok(())
}

/// Drops `count` references; the last one calls the destructor (on the calling thread,
/// after every lock is released; CUDA forbids destructors to call the API).
pub(super) fn release_user_object(object: usize, count: c_uint) -> Result<(), CUresult> {
    let d = driver()?;
    let o = d.user_objects.get(object).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
    let last = {
        let mut refs = lock(&o.refs);
        *refs = refs.checked_sub(count).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        *refs == 0
    };
    if last {
        d.user_objects.remove(object);
        // SAFETY: the destructor and pointer the client gave `cuUserObjectCreate`.
        unsafe { (o.destroy)(o.ptr as *mut c_void) };
    }
    Ok(())
}

/// `CU_USER_OBJECT_NO_DESTRUCTOR_SYNC`, the one flag `cuUserObjectCreate` takes.
const USER_OBJECT_NO_DESTRUCTOR_SYNC: c_uint = 1;
/// `CU_GRAPH_USER_OBJECT_MOVE`: the graph takes over the caller's references.
const GRAPH_USER_OBJECT_MOVE: c_uint = 1;

#[no_mangle]
pub unsafe extern "C" fn cuUserObjectCreate(
    object: *mut usize,
    ptr: *mut c_void,
    destroy: Option<unsafe extern "C" fn(*mut c_void)>,
    initial: c_uint,
    flags: c_uint,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        let destroy = destroy.ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        if initial == 0 || flags != USER_OBJECT_NO_DESTRUCTOR_SYNC {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let h = d.user_objects.insert(UserObject {
            ptr: ptr as usize,
            destroy,
            refs: Mutex::new(initial),
        });
        // SAFETY: `object` is null or writable (CUDA's contract).
        unsafe { out(object, h) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuUserObjectRetain(object: usize, count: c_uint) -> CUresult {
    entry(|| retain_user_object(object, count))
}

#[no_mangle]
pub unsafe extern "C" fn cuUserObjectRelease(object: usize, count: c_uint) -> CUresult {
    entry(|| release_user_object(object, count))
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphRetainUserObject(
    graph: usize,
    object: usize,
    count: c_uint,
    flags: c_uint,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        let g = d.graphs.get(graph).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        if flags & !GRAPH_USER_OBJECT_MOVE != 0 || count == 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        // Moving takes the caller's references; otherwise the graph adds its own.
        if flags & GRAPH_USER_OBJECT_MOVE == 0 {
            retain_user_object(object, count)?;
        } else {
            d.user_objects.get(object).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        }
        lock(&g.held.0).push((object, count));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphReleaseUserObject(
    graph: usize,
    object: usize,
    count: c_uint,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        let g = d.graphs.get(graph).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        {
            let mut held = lock(&g.held.0);
            let total: c_uint = held.iter().filter(|(o, _)| *o == object).map(|(_, c)| c).sum();
            if total < count {
                return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
            }
            held.retain(|(o, _)| *o != object);
            if total > count {
                held.push((object, total - count));
            }
        }
        release_user_object(object, count)
    })
}
