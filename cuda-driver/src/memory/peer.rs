//! Peer copies: every context is on the one device, so a peer copy is a device-to-device
//! copy once both contexts are checked.

use super::pitched::pitched_copies;
use super::*;

/// Checks the contexts of a peer copy.
pub(super) fn peer_contexts(d: &Driver, contexts: [usize; 2]) -> Result<(), CUresult> {
    if contexts.iter().any(|&c| d.contexts.get(c).is_none()) {
        return Err(CUresult::CUDA_ERROR_INVALID_CONTEXT);
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub(super) fn memcpy_peer(
    dst: u64,
    dst_ctx: usize,
    src: u64,
    src_ctx: usize,
    len: usize,
    stream: usize,
    per_thread: bool,
) -> Result<(), CUresult> {
    peer_contexts(driver()?, [dst_ctx, src_ctx])?;
    let kinds = Kinds::Given { dst_device: true, src_device: true };
    // SAFETY: both sides are device memory, checked against their allocations.
    unsafe { memcpy(dst, src, len, kinds, stream, per_thread, false) }
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyPeer(
    dst: u64,
    dst_ctx: usize,
    src: u64,
    src_ctx: usize,
    len: usize,
) -> CUresult {
    entry(|| memcpy_peer(dst, dst_ctx, src, src_ctx, len, 0, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyPeer_ptds(
    dst: u64,
    dst_ctx: usize,
    src: u64,
    src_ctx: usize,
    len: usize,
) -> CUresult {
    entry(|| memcpy_peer(dst, dst_ctx, src, src_ctx, len, 0, true))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyPeerAsync(
    dst: u64,
    dst_ctx: usize,
    src: u64,
    src_ctx: usize,
    len: usize,
    stream: usize,
) -> CUresult {
    entry(|| memcpy_peer(dst, dst_ctx, src, src_ctx, len, stream, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyPeerAsync_ptsz(
    dst: u64,
    dst_ctx: usize,
    src: u64,
    src_ctx: usize,
    len: usize,
    stream: usize,
) -> CUresult {
    entry(|| memcpy_peer(dst, dst_ctx, src, src_ctx, len, stream, true))
}

const _: () = assert!(
    std::mem::size_of::<Memcpy3d>()
        == std::mem::size_of::<cudarc::driver::sys::CUDA_MEMCPY3D_PEER>()
);

/// `cuMemcpy3DPeer`: a `CUDA_MEMCPY3D_PEER` is a `CUDA_MEMCPY3D` whose two reserved
/// pointers are the source and destination contexts.
///
/// # Safety
/// As [`memcpy_3d`].
pub(super) unsafe fn memcpy_3d_peer(
    p: *const Memcpy3d,
    stream: usize,
    per_thread: bool,
    wait: bool,
) -> Result<(), CUresult> {
    // SAFETY: null or readable (function contract).
    let c = unsafe { crate::arg(p) }?;
    peer_contexts(driver()?, [c.reserved0 as usize, c.reserved1 as usize])?;
    // SAFETY: forwarded (function contract).
    unsafe { copy_3d(c, stream, per_thread, wait) }
}

pitched_copies! {
    cuMemcpy3DPeer(Memcpy3d) => memcpy_3d_peer, sync, false;
    cuMemcpy3DPeer_ptds(Memcpy3d) => memcpy_3d_peer, sync, true;
    cuMemcpy3DPeerAsync(Memcpy3d) => memcpy_3d_peer, async, false;
    cuMemcpy3DPeerAsync_ptsz(Memcpy3d) => memcpy_3d_peer, async, true;
}
