//! The generic address windows (`docs/architecture.md`, *The launch ABI*, *Windows*):
//! shared and local memory are not in the device address space, so their generic
//! addresses are a window's base plus the 32-bit offset in the space. Real device
//! addresses never reach these top-of-range windows, so a generic address tells its
//! space by its upper 32 bits; every other generic address is global. The compiler
//! emits these bases (`cvta`, `isspacep`); the runtime keeps every buffer below them.

/// Generic addresses of shared memory: this base plus the offset in the block's window.
pub const SHARED_WINDOW: u64 = 0xffff_ffff_0000_0000;
/// Generic addresses of local memory: this base plus the offset in the thread's window.
pub const LOCAL_WINDOW: u64 = 0xffff_fffe_0000_0000;
/// Generic addresses of shared and local memory in a module with 32-bit addresses: the
/// top 16 MiB of the 32-bit range hold the shared window, the 16 MiB below it the local
/// window, the 16 MiB below that the kernel's parameter block, and everything below is
/// global (offsets into the address window, which is therefore at most
/// [`PARAM_WINDOW_32`] bytes). The compiler widens such an address to the 64-bit form
/// above before a generic access.
pub const SHARED_WINDOW_32: u32 = 0xff00_0000;
pub const LOCAL_WINDOW_32: u32 = 0xfe00_0000;
/// The kernel's parameter block in the 32-bit generic space (`cvta.param.u32`), below
/// the local window: it lies outside the address window, so this is its offset.
pub const PARAM_WINDOW_32: u32 = 0xfd00_0000;
/// Device-function addresses (function pointers for indirect calls): this window plus
/// the function's index. No memory is there.
pub const FUNCTION_WINDOW: u64 = 0xffff_fffd_0000_0000;
