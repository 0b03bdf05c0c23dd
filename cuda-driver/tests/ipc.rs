//! CUDA IPC between two processes: this test binary exports memory and events, and
//! runs itself again as the other process (`child_*` tests, which do their part only
//! when the environment variable [`ROLE`] names them; in the parent's run they return at
//! once).

mod common;

use std::ffi::{c_uint, c_void};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{library_with_context, proc, INVALID_HANDLE, INVALID_VALUE, SUCCESS};
use libloading::Library;

/// Which `child_*` test the child process runs, and the hex handle it gets.
const ROLE: &str = "PTXVK_IPC_TEST_ROLE";
const HANDLE: &str = "PTXVK_IPC_TEST_HANDLE";

const INVALID_CONTEXT: i32 = 201;
const NOT_READY: i32 = 600;
const CU_EVENT_DISABLE_TIMING: c_uint = 2;
const CU_EVENT_INTERPROCESS: c_uint = 4;
const LAZY_ENABLE_PEER_ACCESS: c_uint = 1;

/// `CUipcMemHandle` / `CUipcEventHandle`.
#[repr(C)]
#[derive(Clone, Copy)]
struct IpcHandle([u8; 64]);

type GetMemHandle = unsafe extern "C" fn(*mut IpcHandle, u64) -> i32;
type OpenMemHandle = unsafe extern "C" fn(*mut u64, IpcHandle, c_uint) -> i32;
type CloseMemHandle = unsafe extern "C" fn(u64) -> i32;
type GetEventHandle = unsafe extern "C" fn(*mut IpcHandle, usize) -> i32;
type OpenEventHandle = unsafe extern "C" fn(*mut usize, IpcHandle) -> i32;
type Alloc = unsafe extern "C" fn(*mut u64, usize) -> i32;
type HtoD = unsafe extern "C" fn(u64, *const c_void, usize) -> i32;
type DtoH = unsafe extern "C" fn(*mut c_void, u64, usize) -> i32;
type MemsetD32 = unsafe extern "C" fn(u64, u32, usize) -> i32;
type EventCreate = unsafe extern "C" fn(*mut usize, c_uint) -> i32;
type EventCall = unsafe extern "C" fn(usize) -> i32;
type EventRecord = unsafe extern "C" fn(usize, usize) -> i32;
type StreamCreate = unsafe extern "C" fn(*mut usize, c_uint) -> i32;
type StreamWaitEvent = unsafe extern "C" fn(usize, usize, c_uint) -> i32;
type HostFunc = unsafe extern "C" fn(usize, unsafe extern "C" fn(*mut c_void), *mut c_void) -> i32;

/// Bytes of the shared allocation: more than one page, not a multiple of one.
const SIZE: usize = 3 * 4096 + 100;
/// How long the child holds its stream before recording the event.
const CHILD_DELAY: Duration = Duration::from_millis(1500);

fn hex(handle: &IpcHandle) -> String {
    handle.0.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> IpcHandle {
    let mut h = [0u8; 64];
    for (i, byte) in h.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).expect("hex handle");
    }
    IpcHandle(h)
}

fn pattern() -> Vec<u8> {
    (0..SIZE).map(|i| (i * 13 % 251) as u8).collect()
}

/// Runs this binary's test `name` as the other process, with `handle`.
fn spawn_child(name: &str, handle: &IpcHandle) -> Child {
    Command::new(std::env::current_exe().expect("test executable"))
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(ROLE, name)
        .env(HANDLE, hex(handle))
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawning the child process")
}

/// The handle when this process is the child for test `name`.
fn child_handle(name: &str) -> Option<IpcHandle> {
    (std::env::var(ROLE).ok()? == name).then(|| unhex(&std::env::var(HANDLE).expect("handle")))
}

fn library() -> Option<Library> {
    library_with_context()
}

#[test]
fn memory_is_shared_with_another_process() {
    let Some(lib) = library() else { return };
    let alloc: Alloc = proc(&lib, "cuMemAlloc");
    let htod: HtoD = proc(&lib, "cuMemcpyHtoD");
    let dtoh: DtoH = proc(&lib, "cuMemcpyDtoH");
    let get: GetMemHandle = proc(&lib, "cuIpcGetMemHandle");
    let data = pattern();
    let mut dptr = 0;
    let mut handle = IpcHandle([0; 64]);
    let mut again = IpcHandle([0; 64]);
    // SAFETY: valid out-pointers and host ranges of the sizes passed.
    unsafe {
        assert_eq!(alloc(&mut dptr, SIZE), SUCCESS);
        assert_eq!(htod(dptr, data.as_ptr().cast(), SIZE), SUCCESS);
        assert_eq!(get(&mut handle, dptr), SUCCESS);
        // The same allocation gives the same handle.
        assert_eq!(get(&mut again, dptr), SUCCESS);
    }
    assert_eq!(handle.0, again.0);

    let child = spawn_child("child_opens_memory", &handle);
    let output = child.wait_with_output().expect("child process");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "the child failed: {stdout}");
    assert!(stdout.contains("child: checked the parent's bytes"), "{stdout}");

    // The child's writes: a memset of the first 64 words and a copy at 5000.
    let mut seen = vec![0u8; SIZE];
    // SAFETY: a writable host range of SIZE bytes.
    assert_eq!(unsafe { dtoh(seen.as_mut_ptr().cast(), dptr, SIZE) }, SUCCESS);
    let mut expected = data;
    for word in expected[..256].chunks_mut(4) {
        word.copy_from_slice(&0xC0FFEE00u32.to_le_bytes());
    }
    expected[5000..5000 + CHILD_BYTES.len()].copy_from_slice(CHILD_BYTES);
    assert!(seen == expected, "the parent does not see the child's writes");
}

const CHILD_BYTES: &[u8] = b"written by the child process";

#[test]
fn child_opens_memory() {
    let Some(handle) = child_handle("child_opens_memory") else { return };
    let lib = library().expect("a device in the child");
    let open: OpenMemHandle = proc(&lib, "cuIpcOpenMemHandle");
    let close: CloseMemHandle = proc(&lib, "cuIpcCloseMemHandle");
    let dtoh: DtoH = proc(&lib, "cuMemcpyDtoH");
    let htod: HtoD = proc(&lib, "cuMemcpyHtoD");
    let memset: MemsetD32 = proc(&lib, "cuMemsetD32");
    let (mut dptr, mut second) = (0, 0);
    let mut seen = vec![0u8; SIZE];
    // SAFETY: valid out-pointers and host ranges of the sizes passed.
    unsafe {
        assert_eq!(open(&mut dptr, handle, LAZY_ENABLE_PEER_ACCESS), SUCCESS);
        assert_ne!(dptr, 0);
        // Opened again: the same address, one more reference.
        assert_eq!(open(&mut second, handle, LAZY_ENABLE_PEER_ACCESS), SUCCESS);
        assert_eq!(second, dptr);
        assert_eq!(dtoh(seen.as_mut_ptr().cast(), dptr, SIZE), SUCCESS);
        assert!(seen == pattern(), "the child does not see the parent's bytes");
        println!("child: checked the parent's bytes");
        assert_eq!(memset(dptr, 0xC0FFEE00, 64), SUCCESS);
        assert_eq!(htod(dptr + 5000, CHILD_BYTES.as_ptr().cast(), CHILD_BYTES.len()), SUCCESS);
        // Reads past the allocation fail: the mapping is the allocation's size.
        assert_eq!(dtoh(seen.as_mut_ptr().cast(), dptr + SIZE as u64 - 8, 16), INVALID_VALUE);
        assert_eq!(close(dptr), SUCCESS);
        // Still mapped (opened twice), until the second close.
        assert_eq!(dtoh(seen.as_mut_ptr().cast(), dptr, 4), SUCCESS);
        assert_eq!(close(dptr), SUCCESS);
        assert_eq!(close(dptr), INVALID_VALUE, "a double close must fail");
        assert_eq!(dtoh(seen.as_mut_ptr().cast(), dptr, 4), INVALID_VALUE);
    }
}

#[test]
fn handles_are_refused_where_cuda_refuses_them() {
    let Some(lib) = library() else { return };
    let alloc: Alloc = proc(&lib, "cuMemAlloc");
    let get: GetMemHandle = proc(&lib, "cuIpcGetMemHandle");
    let open: OpenMemHandle = proc(&lib, "cuIpcOpenMemHandle");
    let close: CloseMemHandle = proc(&lib, "cuIpcCloseMemHandle");
    let create: EventCreate = proc(&lib, "cuEventCreate");
    let get_event: GetEventHandle = proc(&lib, "cuIpcGetEventHandle");
    let open_event: OpenEventHandle = proc(&lib, "cuIpcOpenEventHandle");
    let (mut dptr, mut opened, mut event, mut opened_event) = (0, 0, 0, 0);
    let mut handle = IpcHandle([0; 64]);
    // SAFETY: valid out-pointers.
    unsafe {
        assert_eq!(alloc(&mut dptr, 4096), SUCCESS);
        assert_eq!(get(&mut handle, dptr), SUCCESS);
        // The exporting process cannot open its own handle (cuIpcOpenMemHandle).
        assert_eq!(open(&mut opened, handle, LAZY_ENABLE_PEER_ACCESS), INVALID_CONTEXT);
        // Not the base of an allocation, or no allocation at all.
        assert_eq!(get(&mut handle, dptr + 256), INVALID_VALUE);
        assert_eq!(get(&mut handle, 0x1234), INVALID_VALUE);
        // Garbage handles, and unknown flags.
        assert_eq!(open(&mut opened, IpcHandle([0; 64]), LAZY_ENABLE_PEER_ACCESS), INVALID_VALUE);
        assert_eq!(open(&mut opened, IpcHandle([0xab; 64]), 0), INVALID_VALUE);
        assert_eq!(open(&mut opened, handle, 8), INVALID_VALUE);
        // A process that does not exist.
        let mut forged = handle;
        forged.0[12..16].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
        assert_eq!(open(&mut opened, forged, LAZY_ENABLE_PEER_ACCESS), INVALID_VALUE);
        // Closing what was never opened.
        assert_eq!(close(dptr), INVALID_VALUE);

        // Events: only interprocess ones, which must not time.
        assert_eq!(create(&mut event, CU_EVENT_INTERPROCESS), INVALID_VALUE);
        assert_eq!(create(&mut event, CU_EVENT_DISABLE_TIMING), SUCCESS);
        assert_eq!(get_event(&mut handle, event), INVALID_VALUE);
        assert_eq!(get_event(&mut handle, 0x77), INVALID_HANDLE);
        assert_eq!(create(&mut event, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING), SUCCESS);
        assert_eq!(get_event(&mut handle, event), SUCCESS);
        assert_eq!(open_event(&mut opened_event, handle), INVALID_CONTEXT);
        assert_eq!(open_event(&mut opened_event, IpcHandle([0; 64])), INVALID_VALUE);
    }
}

#[test]
fn events_recorded_in_another_process_are_seen_here() {
    let Some(lib) = library() else { return };
    let create: EventCreate = proc(&lib, "cuEventCreate");
    let get_event: GetEventHandle = proc(&lib, "cuIpcGetEventHandle");
    let query: EventCall = proc(&lib, "cuEventQuery");
    let synchronize: EventCall = proc(&lib, "cuEventSynchronize");
    let stream_create: StreamCreate = proc(&lib, "cuStreamCreate");
    let stream_wait: StreamWaitEvent = proc(&lib, "cuStreamWaitEvent");
    let stream_sync: EventCall = proc(&lib, "cuStreamSynchronize");
    let (mut event, mut stream) = (0, 0);
    let mut handle = IpcHandle([0; 64]);
    // SAFETY: valid out-pointers.
    unsafe {
        assert_eq!(create(&mut event, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING), SUCCESS);
        assert_eq!(get_event(&mut handle, event), SUCCESS);
        assert_eq!(stream_create(&mut stream, 0), SUCCESS);
        // Never recorded: complete.
        assert_eq!(query(event), SUCCESS);
    }
    let mut child = spawn_child("child_records_event", &handle);
    let mut lines = BufReader::new(child.stdout.take().expect("child stdout")).lines();
    let recorded =
        lines.by_ref().map_while(Result::ok).any(|line| line.contains("child: recorded"));
    assert!(recorded, "the child did not record the event");
    let start = Instant::now();
    // SAFETY: live handles.
    unsafe {
        // The child's stream is still held: its record is not complete.
        assert_eq!(query(event), NOT_READY);
        // A stream of this process waits for it.
        assert_eq!(stream_wait(stream, event, 0), SUCCESS);
        assert_eq!(stream_sync(stream), SUCCESS);
        assert_eq!(query(event), SUCCESS, "the stream went on before the record completed");
        assert!(start.elapsed() > CHILD_DELAY / 3, "waited only {:?}", start.elapsed());
        assert_eq!(synchronize(event), SUCCESS);
    }
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(child.wait().expect("child process").success(), "the child failed: {rest:?}");
}

unsafe extern "C" fn hold_stream(_: *mut c_void) {
    std::thread::sleep(CHILD_DELAY);
}

#[test]
fn child_records_event() {
    let Some(handle) = child_handle("child_records_event") else { return };
    let lib = library().expect("a device in the child");
    let open_event: OpenEventHandle = proc(&lib, "cuIpcOpenEventHandle");
    let record: EventRecord = proc(&lib, "cuEventRecord");
    let query: EventCall = proc(&lib, "cuEventQuery");
    let synchronize: EventCall = proc(&lib, "cuEventSynchronize");
    let destroy: EventCall = proc(&lib, "cuEventDestroy");
    let stream_create: StreamCreate = proc(&lib, "cuStreamCreate");
    let host_func: HostFunc = proc(&lib, "cuLaunchHostFunc");
    let (mut event, mut stream) = (0, 0);
    // SAFETY: valid out-pointers; the host function ignores its argument.
    unsafe {
        assert_eq!(open_event(&mut event, handle), SUCCESS);
        assert_eq!(stream_create(&mut stream, 0), SUCCESS);
        assert_eq!(host_func(stream, hold_stream, std::ptr::null_mut()), SUCCESS);
        assert_eq!(record(event, stream), SUCCESS);
        assert_eq!(query(event), NOT_READY);
    }
    println!("child: recorded");
    // SAFETY: live handles.
    unsafe {
        assert_eq!(synchronize(event), SUCCESS);
        assert_eq!(query(event), SUCCESS);
        assert_eq!(destroy(event), SUCCESS);
    }
}
