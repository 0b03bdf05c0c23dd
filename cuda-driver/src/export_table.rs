//! `cuGetExportTable`: the private tables NVIDIA's CUDA runtime (libcudart, static or
//! shared) asks the driver for before its first call, implemented on this library's
//! state.
//!
//! A table is an array of pointers found by a 16-byte id. Most begin with their own
//! size in bytes. What each slot does, and the runtime's integrity check, are
//! documented by ZLUDA (`dark_api/src/lib.rs`, `zluda/src/impl/driver.rs`) from
//! observing the runtime; the code here is ptxvk's own. A slot is answered only where a
//! runtime we run calls it (NVIDIA's runtimes 11.8, 12.9 and 13.5 from PyPI, static and
//! shared: `cuda-driver/tests/cudart.rs` asserts every answered slot is called and
//! no other); every other slot logs its call (`PTXVK_LOG=driver`) and answers
//! `CUDA_ERROR_NOT_SUPPORTED`; unknown tables are `CUDA_ERROR_INVALID_VALUE`, logged
//! likewise. Neither crashes.
//!
//! | table (id)                                      | answered slots                       |
//! |-------------------------------------------------|--------------------------------------|
//! | runtime interface `6bd5fb6c-…-d93912fd9df9`     | 2 primary context; 6 module from fatbin, 7 (11.8); 12 compilers (13.x shared) |
//! | tools TLS `42d85a81-…-f6e78a3aecdc`             | none (size only)                     |
//! | tools callback hooks `a094798c-…-0800200c0a66`  | 2, 6 hook buffers                    |
//! | context-local storage `c693336e-…-68f355d89593` | 0 put, 1 delete, 2 get               |
//! | integrity check `d4082055-…-ba123c66e1f2`       | 1 the check (HMAC-MD2, [`integrity`]) |
//! | context checks `263e8860-…-bbd5006dfa7e`        | 2, 3 (answer "nothing set"; 12.x, 13.x) |
//! | tools context `21318c60-…-41ff7324c8f2`         | none (size only; 13.4+)              |

use std::cell::UnsafeCell;
use std::ffi::{c_int, c_uint, c_void};
use std::sync::PoisonError;

use cudarc::driver::sys::{CUresult, CUuuid};

use crate::context_storage::{Destructor, STORAGE};
use crate::trace::trace;
use crate::{entry, out};

/// A table: pointers, immutable after start-up.
#[repr(C)]
pub(crate) struct Table<const N: usize>([*const c_void; N]);

// SAFETY: the pointers are function addresses and sizes, never written.
unsafe impl<const N: usize> Sync for Table<N> {}

impl<const N: usize> Table<N> {
    fn start(&'static self) -> *const c_void {
        self.0.as_ptr().cast()
    }
}

/// A slot this library answers: its index and function.
#[derive(Clone, Copy)]
pub(crate) struct Slot(usize, *const c_void);

// SAFETY: a function address, never written.
unsafe impl Sync for Slot {}

/// The table of `N` slots whose slot 0 holds its size in bytes (when `sized`), `answered`
/// its answered slots and `unknown` every other.
const fn table<const N: usize>(
    mut unknown: [*const c_void; N],
    sized: bool,
    answered: &[Slot],
) -> Table<N> {
    if sized {
        unknown[0] = (N * std::mem::size_of::<usize>()) as *const c_void;
    }
    let mut i = 0;
    while i < answered.len() {
        unknown[answered[i].0] = answered[i].1;
        i += 1;
    }
    Table(unknown)
}

/// A slot whose meaning is unknown: logs the call and fails.
unsafe extern "C" fn unknown<const TABLE: usize, const SLOT: usize>() -> CUresult {
    let name = TABLES.get(TABLE).map_or("?", |t| t.name);
    trace!("{name} slot {SLOT}: unknown, not supported");
    CUresult::CUDA_ERROR_NOT_SUPPORTED
}

/// `N` [`unknown`] slots of table `$table` (an index into [`TABLES`]).
macro_rules! unknown_slots {
    ($table:ident, $n:literal) => {
        seq_macro::seq!(SLOT in 0..$n {
            [#(unknown::<$table, SLOT> as unsafe extern "C" fn() -> CUresult as *const c_void,)*]
        })
    };
}

/// Indices of the tables in [`TABLES`], for the unknown slots' names.
const RT: usize = 0;
const TLS: usize = 1;
const HOOKS: usize = 2;
const CLS: usize = 3;
const INTEGRITY: usize = 4;
const CHECKS: usize = 5;
const CONTEXT: usize = 6;

macro_rules! fp {
    ($f:expr) => {
        $f as *const c_void
    };
}

/// The runtime interface answers what runtimes 11.8 (2, 6, 7), 12.9 (2) and 13.5 (2,
/// 12) call. 13 slots: the shared runtime 13 calls slot 12, so a shorter table would
/// hand it whatever lies after the table as a function.
const RUNTIME_ANSWERS: &[Slot] = &[
    Slot(2, fp!(rt_primary_context as unsafe extern "C" fn(_, _) -> _)),
    Slot(6, fp!(rt_module_from_fatbin as unsafe extern "C" fn(_, _, _, _, _) -> _)),
    Slot(7, fp!(rt_slot7 as unsafe extern "C" fn(_) -> _)),
    Slot(12, fp!(rt_load_compilers as unsafe extern "C" fn() -> _)),
];
static RUNTIME_INTERFACE: Table<13> = table(unknown_slots!(RT, 13), true, RUNTIME_ANSWERS);

/// Asked for by every runtime; no slot of it called yet.
static TOOLS_TLS: Table<4> = table(unknown_slots!(TLS, 4), true, &[]);

const HOOKS_ANSWERS: &[Slot] = &[
    Slot(2, fp!(hooks_buffer_1 as unsafe extern "C" fn(_, _))),
    Slot(6, fp!(hooks_buffer_2 as unsafe extern "C" fn(_, _))),
];
static TOOLS_HOOKS: Table<7> = table(unknown_slots!(HOOKS, 7), true, HOOKS_ANSWERS);

/// Context-local storage has no size slot.
const STORAGE_ANSWERS: &[Slot] = &[
    Slot(0, fp!(cls_put as unsafe extern "C" fn(_, _, _, _) -> _)),
    Slot(1, fp!(cls_delete as unsafe extern "C" fn(_, _) -> _)),
    Slot(2, fp!(cls_get as unsafe extern "C" fn(_, _, _) -> _)),
];
static CONTEXT_STORAGE: Table<4> = table(unknown_slots!(CLS, 4), false, STORAGE_ANSWERS);

const INTEGRITY_ANSWERS: &[Slot] =
    &[Slot(1, fp!(integrity_check as unsafe extern "C" fn(_, _, _) -> _))];
static INTEGRITY_CHECK: Table<3> = table(unknown_slots!(INTEGRITY, 3), true, INTEGRITY_ANSWERS);

const CHECKS_ANSWERS: &[Slot] = &[
    Slot(2, fp!(context_check as unsafe extern "C" fn(_, _, _) -> _)),
    Slot(3, fp!(checks_slot3 as unsafe extern "C" fn() -> _)),
];
static CONTEXT_CHECKS: Table<4> = table(unknown_slots!(CHECKS, 4), true, CHECKS_ANSWERS);

/// The tools' context interface, asked for by CUDA 13.4+ runtimes (a size and 94
/// slots, none called yet).
static TOOLS_CONTEXT: Table<95> = table(unknown_slots!(CONTEXT, 95), true, &[]);

/// A UUID as written `{6BD5FB6C-5BF4-E74A-8987-D93912FD9DF9}`: its bytes in text order.
const fn id(hex: &[u8; 32]) -> [u8; 16] {
    const fn nibble(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => c - b'A' + 10,
        }
    }
    let mut bytes = [0u8; 16];
    let mut i = 0;
    while i < 16 {
        bytes[i] = nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]);
        i += 1;
    }
    bytes
}

/// A table this library serves.
pub(crate) struct Served {
    id: [u8; 16],
    name: &'static str,
    table: &'static (dyn Sync + Start),
    answers: &'static [Slot],
}

/// Every table served. Tables no runtime 11.8 to 13.5 asks for (ZLUDA documents a
/// context-creation, a heap and a device-extras table) are unknown tables here.
static TABLES: [Served; 7] = [
    served(
        b"6BD5FB6C5BF4E74A8987D93912FD9DF9",
        "runtime interface",
        &RUNTIME_INTERFACE,
        RUNTIME_ANSWERS,
    ),
    served(b"42D85A8123F6CB478298F6E78A3AECDC", "tools TLS", &TOOLS_TLS, &[]),
    served(
        b"A094798C2E742E7493F20800200C0A66",
        "tools callback hooks",
        &TOOLS_HOOKS,
        HOOKS_ANSWERS,
    ),
    served(
        b"C693336E1121DF11A8C368F355D89593",
        "context-local storage",
        &CONTEXT_STORAGE,
        STORAGE_ANSWERS,
    ),
    served(
        b"D4082055BDE6704B8D34BA123C66E1F2",
        "integrity check",
        &INTEGRITY_CHECK,
        INTEGRITY_ANSWERS,
    ),
    served(b"263E88607CD2614392F6BBD5006DFA7E", "context checks", &CONTEXT_CHECKS, CHECKS_ANSWERS),
    served(b"21318C60971432488CA641FF7324C8F2", "tools context", &TOOLS_CONTEXT, &[]),
];

const fn served(
    hex: &[u8; 32],
    name: &'static str,
    table: &'static (dyn Sync + Start),
    answers: &'static [Slot],
) -> Served {
    Served { id: id(hex), name, table, answers }
}

/// A table's first pointer.
pub(crate) trait Start {
    fn start_ptr(&'static self) -> *const c_void;
}

impl<const N: usize> Start for Table<N> {
    fn start_ptr(&'static self) -> *const c_void {
        self.start()
    }
}

/// The UUID in its usual text form.
fn show(bytes: &[u8; 16]) -> String {
    let h: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{{{}-{}-{}-{}-{}}}",
        h[0..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..16].concat()
    )
}

/// The table with id `id`, if this library serves it.
pub(crate) fn find(id: &[u8; 16]) -> Option<&'static Served> {
    TABLES.iter().find(|t| t.id == *id)
}

#[no_mangle]
pub unsafe extern "C" fn cuGetExportTable(
    table: *mut *const c_void,
    table_id: *const CUuuid,
) -> CUresult {
    entry(|| {
        // SAFETY: `table_id` is null or points to 16 bytes (CUDA's contract).
        let id = unsafe { crate::arg(table_id) }?;
        let bytes: [u8; 16] = id.bytes.map(|b| b as u8);
        match find(&bytes) {
            Some(served) => {
                let start = served.table.start_ptr();
                let answers: Vec<usize> = served.answers.iter().map(|s| s.0).collect();
                trace!(
                    "cuGetExportTable {} ({}) -> {start:p}, answers slots {answers:?}",
                    show(&bytes),
                    served.name
                );
                // SAFETY: `table` is null or writable (CUDA's contract).
                unsafe { out(table, start) }
            }
            None => {
                trace!(
                    "cuGetExportTable {}: unknown table (CUDA_ERROR_INVALID_VALUE)",
                    show(&bytes)
                );
                if !table.is_null() {
                    // SAFETY: non-null and writable (CUDA's contract).
                    unsafe { out(table, std::ptr::null()) }?;
                }
                Err(CUresult::CUDA_ERROR_INVALID_VALUE)
            }
        }
    })
}

// --- The runtime interface -------------------------------------------------------

/// Loads a module from a fatbin wrapper or header (or any module image), making the
/// primary context current first if none is (the runtime loads its registered
/// fatbins lazily, on the thread of the first call that needs them).
///
/// # Safety
/// `image` is a module image as `cuModuleLoadData` takes.
unsafe fn load_module(module: *mut usize, image: *const c_void) -> Result<(), CUresult> {
    if crate::device::current().is_err() {
        crate::device::make_primary_current()?;
    }
    // SAFETY: forwarded (function contract).
    let handle = unsafe { crate::module::load_image(image) }?;
    // SAFETY: `module` is null or writable (the runtime's contract).
    unsafe { out(module, handle) }
}

/// Slot 6 (runtime 11.8, at its first launch): the module of the fatbin wrapper nvcc
/// embedded. The other three arguments (null, null, 0 as 11.8 passes them) are not read.
unsafe extern "C" fn rt_module_from_fatbin(
    module: *mut usize,
    wrapper: *const c_void,
    a3: *mut c_void,
    a4: *mut c_void,
    a5: c_uint,
) -> CUresult {
    trace!("runtime interface slot 6: module from fatbin {wrapper:p} ({a3:p}, {a4:p}, {a5})");
    // SAFETY: the runtime passes the wrapper nvcc embedded and a writable out-pointer.
    entry(|| unsafe { load_module(module, wrapper) })
}

/// The device's primary context (retained).
unsafe extern "C" fn rt_primary_context(ctx: *mut usize, dev: c_int) -> CUresult {
    trace!("runtime interface slot 2: primary context of device {dev}");
    // SAFETY: forwarded (the runtime's out-pointer).
    let r = unsafe { crate::device::cuDevicePrimaryCtxRetain(ctx, dev) };
    // The runtime then loads modules without making a context current: the primary
    // context becomes current where none is.
    if r == CUresult::CUDA_SUCCESS && crate::device::current().is_err() {
        return entry(|| crate::device::make_primary_current().map(|_| ()));
    }
    r
}

/// Slot 12, which the shared runtime calls while it initializes (known elsewhere as
/// loading the driver's compilers): ptxvk compiles PTX itself, so there is nothing to
/// load. Its arguments are not read (the C calling convention lets the caller pass any).
unsafe extern "C" fn rt_load_compilers() -> CUresult {
    trace!("runtime interface slot 12: compilers (none to load)");
    CUresult::CUDA_SUCCESS
}

/// Slot 7 (runtime 11.8, with the fatbin wrapper it then loads through slot 6): nothing
/// to do.
unsafe extern "C" fn rt_slot7(arg: usize) -> CUresult {
    trace!("runtime interface slot 7: {arg:#x}");
    CUresult::CUDA_SUCCESS
}

// --- Tools hooks -------------------------------------------------------------------

/// Memory the runtime's tool hooks write into (and tools would read).
struct HookBuffer<const N: usize>(UnsafeCell<[u32; N]>);

// SAFETY: only the runtime writes it, through the pointer it is given; this library
// never reads or writes it.
unsafe impl<const N: usize> Sync for HookBuffer<N> {}

static HOOKS_1: HookBuffer<1024> = HookBuffer(UnsafeCell::new([0; 1024]));
static HOOKS_2: HookBuffer<14> = HookBuffer(UnsafeCell::new([0; 14]));

/// # Safety
/// `ptr` and `size` are null or writable.
unsafe fn give<const N: usize>(
    buffer: &'static HookBuffer<N>,
    ptr: *mut *mut c_void,
    size: *mut usize,
) {
    // SAFETY: null or writable (function contract).
    let _ = unsafe { out(ptr, buffer.0.get().cast::<c_void>()) };
    // SAFETY: as above.
    let _ = unsafe { out(size, N * 4) };
}

unsafe extern "C" fn hooks_buffer_1(ptr: *mut *mut c_void, size: *mut usize) {
    trace!("tools callback hooks slot 2");
    // SAFETY: the runtime's out-pointers.
    unsafe { give(&HOOKS_1, ptr, size) }
}

unsafe extern "C" fn hooks_buffer_2(ptr: *mut *mut c_void, size: *mut usize) {
    trace!("tools callback hooks slot 6");
    // SAFETY: the runtime's out-pointers.
    unsafe { give(&HOOKS_2, ptr, size) }
}

// --- Context-local storage ---------------------------------------------------------

/// `ctx`, or the current context when it is null.
fn context_or_current(ctx: usize) -> Result<usize, CUresult> {
    if ctx == 0 {
        return crate::device::current();
    }
    let d = crate::state::driver_in_any_state()?;
    d.contexts.get(ctx).map(|_| ctx).ok_or(CUresult::CUDA_ERROR_INVALID_CONTEXT)
}

unsafe extern "C" fn cls_put(
    ctx: usize,
    key: *mut c_void,
    value: *mut c_void,
    dtor: Option<Destructor>,
) -> CUresult {
    trace!("context-local storage slot 0: put ctx={ctx:#x} key={key:p} value={value:p}");
    entry(|| {
        let ctx = context_or_current(ctx)?;
        let mut s = STORAGE.lock().unwrap_or_else(PoisonError::into_inner);
        s.insert((ctx, key as usize), (value as usize, dtor));
        Ok(())
    })
}

unsafe extern "C" fn cls_delete(ctx: usize, key: *mut c_void) -> CUresult {
    trace!("context-local storage slot 1: delete ctx={ctx:#x} key={key:p}");
    entry(|| {
        let ctx = context_or_current(ctx)?;
        let mut s = STORAGE.lock().unwrap_or_else(PoisonError::into_inner);
        s.remove(&(ctx, key as usize)).map(|_| ()).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)
    })
}

unsafe extern "C" fn cls_get(value: *mut *mut c_void, ctx: usize, key: *mut c_void) -> CUresult {
    let r = entry(|| {
        let ctx = context_or_current(ctx)?;
        let s = STORAGE.lock().unwrap_or_else(PoisonError::into_inner);
        let v = s.get(&(ctx, key as usize)).map(|(v, _)| *v);
        drop(s);
        match v {
            // SAFETY: `value` is null or writable (the runtime's contract).
            Some(v) => unsafe { out(value, v as *mut c_void) },
            None => Err(CUresult::CUDA_ERROR_INVALID_HANDLE),
        }
    });
    trace!("context-local storage slot 2: get ctx={ctx:#x} key={key:p}: {r:?}");
    r
}

// --- Context checks ------------------------------------------------------------------

unsafe extern "C" fn context_check(
    ctx: usize,
    result: *mut u32,
    _other: *mut *const c_void,
) -> CUresult {
    trace!("context checks slot 2: ctx={ctx:#x}");
    // SAFETY: `result` is null or writable (the runtime's contract).
    entry(|| unsafe { out(result, 0) })
}

unsafe extern "C" fn checks_slot3() -> u32 {
    trace!("context checks slot 3");
    0
}

// --- The integrity check -------------------------------------------------------------

unsafe extern "C" fn integrity_check(
    version: u32,
    unix_seconds: u64,
    result: *mut [u64; 2],
) -> CUresult {
    trace!("integrity check slot 1: version {version}, time {unix_seconds}");
    entry(|| {
        let d = crate::state::driver_in_any_state()?;
        let uuid = crate::device::uuid(d);
        let pci = |a| crate::device::attribute(d, a as c_int);
        use cudarc::driver::sys::CUdevice_attribute as A;
        let device = integrity::Device {
            uuid,
            pci_domain: pci(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
            pci_bus: pci(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
            pci_device: pci(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?,
        };
        // SAFETY: `pthread_self` has no preconditions.
        let thread = unsafe { pthread_self() } as u32;
        let input = integrity::Input {
            driver_version: crate::driver_version() as u32,
            version,
            process: std::process::id(),
            thread,
            runtime_table: RUNTIME_INTERFACE.start() as u64,
            check_table: INTEGRITY_CHECK.start() as u64,
            check_fn: INTEGRITY_CHECK.0[1] as u64,
            unix_seconds,
        };
        // SAFETY: `result` is null or writable (the runtime's contract).
        unsafe { out(result, integrity::answer(&input, &[device])) }
    })
}

extern "C" {
    fn pthread_self() -> usize;
}

/// The runtime's integrity check: for versions ending in 0 or 1 a constant, otherwise
/// HMAC-MD2 (RFC 1319, RFC 2104 with 16-byte blocks) under a fixed key of the
/// driver's and process's identity and of every device.
pub(crate) mod integrity {
    /// RFC 1319's substitution table (from the digits of pi).
    const S: [u8; 256] = [
        41, 46, 67, 201, 162, 216, 124, 1, 61, 54, 84, 161, 236, 240, 6, 19, 98, 167, 5, 243, 192,
        199, 115, 140, 152, 147, 43, 217, 188, 76, 130, 202, 30, 155, 87, 60, 253, 212, 224, 22,
        103, 66, 111, 24, 138, 23, 229, 18, 190, 78, 196, 214, 218, 158, 222, 73, 160, 251, 245,
        142, 187, 47, 238, 122, 169, 104, 121, 145, 21, 178, 7, 63, 148, 194, 16, 137, 11, 34, 95,
        33, 128, 127, 93, 154, 90, 144, 50, 39, 53, 62, 204, 231, 191, 247, 151, 3, 255, 25, 48,
        179, 72, 165, 181, 209, 215, 94, 146, 42, 172, 86, 170, 198, 79, 184, 56, 210, 150, 164,
        125, 182, 118, 252, 107, 226, 156, 116, 4, 241, 69, 157, 112, 89, 100, 113, 135, 32, 134,
        91, 207, 101, 230, 45, 168, 2, 27, 96, 37, 173, 174, 176, 185, 246, 28, 70, 97, 105, 52,
        64, 126, 15, 85, 71, 163, 35, 221, 81, 175, 58, 195, 92, 249, 206, 186, 197, 234, 38, 44,
        83, 13, 110, 133, 40, 132, 9, 211, 223, 205, 244, 65, 129, 77, 82, 106, 220, 55, 200, 108,
        193, 171, 250, 36, 225, 123, 8, 12, 189, 177, 74, 120, 136, 149, 139, 227, 99, 232, 109,
        233, 203, 213, 254, 59, 0, 29, 57, 242, 239, 183, 14, 102, 88, 208, 228, 166, 119, 114,
        248, 235, 117, 75, 10, 49, 68, 80, 180, 143, 237, 31, 26, 219, 153, 141, 51, 159, 17, 131,
        20,
    ];

    /// MD2's running state.
    pub(crate) struct Md2 {
        x: [u8; 48],
        checksum: [u8; 16],
        block: [u8; 16],
        len: usize,
    }

    impl Md2 {
        pub(crate) fn new() -> Self {
            Md2 { x: [0; 48], checksum: [0; 16], block: [0; 16], len: 0 }
        }

        fn compress(&mut self) {
            let mut last = self.checksum[15];
            for j in 0..16 {
                self.x[16 + j] = self.block[j];
                self.x[32 + j] = self.x[j] ^ self.block[j];
                self.checksum[j] ^= S[usize::from(self.block[j] ^ last)];
                last = self.checksum[j];
            }
            let mut t = 0u8;
            for round in 0..18u8 {
                for k in 0..48 {
                    self.x[k] ^= S[usize::from(t)];
                    t = self.x[k];
                }
                t = t.wrapping_add(round);
            }
        }

        pub(crate) fn update(&mut self, bytes: &[u8]) {
            for &b in bytes {
                self.block[self.len] = b;
                self.len += 1;
                if self.len == 16 {
                    self.compress();
                    self.len = 0;
                }
            }
        }

        pub(crate) fn finish(mut self) -> [u8; 16] {
            let pad = (16 - self.len) as u8;
            self.update(&vec![pad; usize::from(pad)]);
            let checksum = self.checksum;
            self.update(&checksum);
            let mut digest = [0u8; 16];
            digest.copy_from_slice(&self.x[..16]);
            digest
        }
    }

    /// The check's key.
    const KEY: [u8; 16] = [
        0x14, 0x6A, 0xDD, 0xAE, 0x53, 0xA9, 0xA7, 0x52, 0xAA, 0x08, 0x41, 0x36, 0x0B, 0xF5, 0x5A,
        0x9F,
    ];

    /// What is hashed about the driver and the process (laid out as the runtime
    /// does, little-endian, 48 bytes).
    pub(crate) struct Input {
        pub(crate) driver_version: u32,
        pub(crate) version: u32,
        pub(crate) process: u32,
        pub(crate) thread: u32,
        pub(crate) runtime_table: u64,
        pub(crate) check_table: u64,
        pub(crate) check_fn: u64,
        pub(crate) unix_seconds: u64,
    }

    /// What is hashed about each device (28 bytes).
    pub(crate) struct Device {
        pub(crate) uuid: [u8; 16],
        pub(crate) pci_domain: i32,
        pub(crate) pci_bus: i32,
        pub(crate) pci_device: i32,
    }

    pub(crate) fn answer(input: &Input, devices: &[Device]) -> [u64; 2] {
        match input.version % 10 {
            0 => return [0x3341_181C_03CB_675C, 0x8ED3_83AA_1F4C_D1E8],
            1 => return [0x1841_181C_03CB_675C, 0x8ED3_83AA_1F4C_D1E8],
            _ => {}
        }
        let mut message = Vec::with_capacity(48 + 28 * devices.len());
        for v in [input.driver_version, input.version, input.process, input.thread] {
            message.extend_from_slice(&v.to_le_bytes());
        }
        for v in [input.runtime_table, input.check_table, input.check_fn, input.unix_seconds] {
            message.extend_from_slice(&v.to_le_bytes());
        }
        for d in devices {
            message.extend_from_slice(&d.uuid);
            for v in [d.pci_domain, d.pci_bus, d.pci_device] {
                message.extend_from_slice(&v.to_le_bytes());
            }
        }
        let digest = hmac(&message);
        let (lo, hi) = digest.split_at(8);
        let word = |b: &[u8]| b.iter().rev().fold(0u64, |w, &x| w << 8 | u64::from(x));
        [word(lo), word(hi)]
    }

    /// HMAC-MD2 under [`KEY`].
    pub(crate) fn hmac(message: &[u8]) -> [u8; 16] {
        let mut inner = Md2::new();
        inner.update(&KEY.map(|k| k ^ 0x36));
        inner.update(message);
        let inner = inner.finish();
        let mut outer = Md2::new();
        outer.update(&KEY.map(|k| k ^ 0x5c));
        outer.update(&inner);
        outer.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md2(bytes: &[u8]) -> String {
        let mut m = integrity::Md2::new();
        m.update(bytes);
        m.finish().iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn md2_matches_rfc_1319() {
        assert_eq!(md2(b""), "8350e5a3e24c153df2275c9f80692773");
        assert_eq!(md2(b"abc"), "da853b0d3f88d99b30283a69e6ded6bb");
        assert_eq!(md2(b"message digest"), "ab4f496bfb2a530b219ff33031fe06b0");
        assert_eq!(
            md2(
                b"12345678901234567890123456789012345678901234567890123456789012345678901234567890"
            ),
            "d5976f79d83d3a0dc9806c3c66f3efd8"
        );
    }

    #[test]
    fn tables_are_found_by_id_and_start_with_their_size() {
        let served = find(&id(b"6BD5FB6C5BF4E74A8987D93912FD9DF9")).expect("served");
        assert_eq!(served.name, "runtime interface");
        let start = served.table.start_ptr();
        // SAFETY: the table's first slot.
        assert_eq!(unsafe { *start.cast::<usize>() }, 13 * 8);
        assert!(find(&[0; 16]).is_none());
        assert_eq!(
            show(&id(b"6BD5FB6C5BF4E74A8987D93912FD9DF9")),
            "{6bd5fb6c-5bf4-e74a-8987-d93912fd9df9}"
        );
    }

    #[test]
    fn answered_slots_are_in_their_tables_and_the_rest_log() {
        for t in &TABLES {
            let slots: Vec<usize> = t.answers.iter().map(|s| s.0).collect();
            let mut sorted = slots.clone();
            sorted.dedup();
            assert_eq!(slots, sorted, "{}: slots in order, each once", t.name);
            let start = t.table.start_ptr().cast::<*const c_void>();
            for s in t.answers {
                // SAFETY: `table` puts an answered slot inside its table (a const
                // index out of bounds would not compile).
                let slot = unsafe { *start.add(s.0) };
                assert_eq!(slot, s.1, "{} slot {}", t.name, s.0);
            }
        }
    }

    #[test]
    fn versions_ending_in_0_or_1_get_constants() {
        let input = integrity::Input {
            driver_version: 13030,
            version: 13050,
            process: 1,
            thread: 2,
            runtime_table: 3,
            check_table: 4,
            check_fn: 5,
            unix_seconds: 6,
        };
        assert_eq!(integrity::answer(&input, &[]), [0x3341_181C_03CB_675C, 0x8ED3_83AA_1F4C_D1E8]);
        let other = integrity::Input { version: 13052, ..input };
        assert_ne!(integrity::answer(&other, &[]), [0x3341_181C_03CB_675C, 0x8ED3_83AA_1F4C_D1E8]);
    }
}
