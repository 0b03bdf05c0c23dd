//! GPU tests of streams, events, memory kinds and pools. Expected values come from CPU
//! models of the kernel (`dst[i] = src[i] * a + b`) and of memset and pitched copies.
//! Run with `VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation` (as `make test` does), every
//! test also fails on any validation warning or error.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{
    affine_kernel, affine_params, assert_no_validation_messages, bytes, open_or_skip, spin_kernel,
    words, NEEDS,
};
use ptxvk_vk::{
    Buffer, BufferRegion, Device, DeviceSelector, Error, Event, Extent3d, HostLayout, LaunchConfig,
    MemoryKind, Pattern, Program, Stream, StreamKind,
};

fn affine(dev: &Device) -> Program {
    dev.create_program(&affine_kernel(), "main", &NEEDS).expect("affine program")
}

/// Enqueues `dst[i] = src[i] * a + b` for `n` elements (n a multiple of 32).
fn enqueue_affine(s: &Stream, p: &Program, src: &Buffer, dst: &Buffer, n: u32, a: u32, b: u32) {
    let cfg = LaunchConfig { grid: [n / 32, 1, 1], block: [32, 1, 1], ..LaunchConfig::default() };
    let params = affine_params(src.address(), dst.address(), a, b);
    s.launch_with_params(p, &cfg, &params, &[src, dst]).expect("launch");
}

/// A host function that holds the stream for `ms` milliseconds, so that work enqueued
/// after it is certainly still pending while the test goes on.
fn hold(s: &Stream, ms: u64) {
    s.launch_host_func(Box::new(move || std::thread::sleep(Duration::from_millis(ms))))
        .expect("host function");
}

fn read_u32(s: &Stream, buf: &Buffer) -> Vec<u32> {
    let mut out = vec![0u8; buf.size() as usize];
    s.copy_from_buffer(buf, 0, &mut out).expect("copy to host");
    words(&out)
}

#[test]
fn dependent_kernels_and_copies_on_one_stream() {
    let Some(dev) = open_or_skip() else { return };
    let p = affine(&dev);
    let s = dev.create_stream(StreamKind::Blocking, 0).expect("stream");
    let n = 256u32;
    let input: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let x = dev.alloc(u64::from(n) * 4).expect("alloc");
    let y = dev.alloc(u64::from(n) * 4).expect("alloc");
    let z = dev.alloc(u64::from(n) * 4).expect("alloc");
    // More than MAX_BATCH_OPS operations, none waited for until the end.
    let mut model = input.clone();
    s.copy_to_buffer(&x, 0, &bytes(&input)).expect("upload");
    for round in 0..100u32 {
        let (a, b) = (round * 2 + 3, round ^ 0x55);
        enqueue_affine(&s, &p, &x, &y, n, a, b);
        s.copy_buffer(&y, 0, &x, 0, u64::from(n) * 4).expect("copy");
        for v in &mut model {
            *v = v.wrapping_mul(a).wrapping_add(b);
        }
    }
    s.memset(&z, 0, 64, Pattern::U32(0xdead_beef)).expect("memset");
    s.copy_buffer(&x, 64, &z, 64, u64::from(n) * 4 - 64).expect("copy");
    let mut expected = model.clone();
    expected[..16].fill(0xdead_beef);
    assert_eq!(read_u32(&s, &z), expected);
    s.synchronize().expect("synchronize");
    assert_no_validation_messages();
}

#[test]
fn streams_wait_for_events_of_other_streams() {
    let Some(dev) = open_or_skip() else { return };
    let p = affine(&dev);
    let producer = dev.create_stream(StreamKind::NonBlocking, 0).expect("stream");
    let consumer = dev.create_stream(StreamKind::NonBlocking, 0).expect("stream");
    let n = 64u32;
    let src = dev.alloc(u64::from(n) * 4).expect("alloc");
    let mid = dev.alloc(u64::from(n) * 4).expect("alloc");
    let out = dev.alloc(u64::from(n) * 4).expect("alloc");
    let input: Vec<u32> = (0..n).map(|i| i * 7 + 1).collect();
    dev.upload(&src, 0, &bytes(&input)).expect("upload");
    let ready = dev.create_event(false).expect("event");
    // The producer is held on the host, so without the wait the consumer would read the
    // zeros of `mid`.
    hold(&producer, 150);
    enqueue_affine(&producer, &p, &src, &mid, n, 3, 5);
    producer.record(&ready).expect("record");
    assert!(!ready.query().expect("query"), "the producer is still held");
    consumer.wait_event(&ready).expect("wait event");
    enqueue_affine(&consumer, &p, &mid, &out, n, 2, 1);
    consumer.synchronize().expect("synchronize consumer");
    assert!(ready.query().expect("query"));
    let expected: Vec<u32> = input.iter().map(|v| (v * 3 + 5) * 2 + 1).collect();
    assert_eq!(read_u32(&consumer, &out), expected);
    producer.synchronize().expect("synchronize");
    assert_no_validation_messages();
}

#[test]
fn legacy_default_stream_waits_for_blocking_streams() {
    let Some(dev) = open_or_skip() else { return };
    let p = affine(&dev);
    let blocking = dev.create_stream(StreamKind::Blocking, 0).expect("stream");
    let n = 32u32;
    let src = dev.alloc(u64::from(n) * 4).expect("alloc");
    let mid = dev.alloc(u64::from(n) * 4).expect("alloc");
    let out = dev.alloc(u64::from(n) * 4).expect("alloc");
    dev.upload(&src, 0, &bytes(&[9; 32])).expect("upload");
    hold(&blocking, 100);
    enqueue_affine(&blocking, &p, &src, &mid, n, 1, 1);
    // Legacy semantics: the default stream's launch waits for the blocking stream's work,
    // and the blocking stream's next launch waits for the default stream's.
    let legacy = dev.default_stream();
    enqueue_affine(&legacy, &p, &mid, &out, n, 10, 0);
    enqueue_affine(&blocking, &p, &out, &src, n, 1, 5);
    blocking.synchronize().expect("synchronize");
    assert_eq!(read_u32(&legacy, &out), vec![100; 32]);
    assert_eq!(read_u32(&legacy, &src), vec![105; 32]);
    // The per-thread default stream is a blocking stream too.
    let per_thread = dev.per_thread_stream().expect("per-thread stream");
    assert_eq!(per_thread.kind(), StreamKind::Blocking);
    assert!(per_thread.same_stream(&dev.per_thread_stream().expect("again")));
    enqueue_affine(&per_thread, &p, &src, &out, n, 2, 0);
    assert_eq!(read_u32(&legacy, &out), vec![210; 32]);
    dev.synchronize().expect("device synchronize");
    assert_no_validation_messages();
}

#[test]
fn eight_threads_enqueue_at_once() {
    let Some(dev) = open_or_skip() else { return };
    let p = affine(&dev);
    let n = 64u32;
    let results: Vec<(Vec<u32>, Vec<u32>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8u32)
            .map(|t| {
                let (dev, p) = (&dev, &p);
                scope.spawn(move || {
                    // Half the threads share the legacy stream, half have their own.
                    let own;
                    let s = if t % 2 == 0 {
                        own = dev.create_stream(StreamKind::NonBlocking, 0).expect("stream");
                        &own
                    } else {
                        own = dev.default_stream();
                        &own
                    };
                    let a = dev.alloc(u64::from(n) * 4).expect("alloc");
                    let input: Vec<u32> = (0..n).map(|i| i + 1000 * t).collect();
                    s.copy_to_buffer(&a, 0, &bytes(&input)).expect("upload");
                    let mut model = input;
                    for k in 0..50 {
                        enqueue_affine(s, p, &a, &a, n, 3, t + k);
                        for v in &mut model {
                            *v = v.wrapping_mul(3).wrapping_add(t + k);
                        }
                    }
                    (read_u32(s, &a), model)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("thread")).collect()
    });
    for (got, model) in results {
        assert_eq!(got, model);
    }
    assert_no_validation_messages();
}

#[test]
fn stream_ordered_allocations_are_reused_only_after_the_stream_passes_the_free() {
    let Some(dev) = open_or_skip() else { return };
    let p = affine(&dev);
    let s = dev.create_stream(StreamKind::NonBlocking, 0).expect("stream");
    let pool = dev.create_pool().expect("pool");
    pool.set_release_threshold(u64::MAX);
    let n = 64u32;
    let src = dev.alloc(u64::from(n) * 4).expect("alloc");
    dev.upload(&src, 0, &bytes(&[4; 64])).expect("upload");
    let out = dev.alloc(u64::from(n) * 4).expect("alloc");

    hold(&s, 100);
    let a = s.alloc_async(u64::from(n) * 4, Some(&pool)).expect("alloc async");
    let a_address = a.address();
    enqueue_affine(&s, &p, &src, &a, n, 5, 0);
    enqueue_affine(&s, &p, &a, &out, n, 1, 1);
    s.free_async(a).expect("free async");
    assert_eq!(pool.used_bytes(), 256, "the freed block is still pending");
    // Still pending: a new allocation must not get the same memory.
    let b = s.alloc_async(u64::from(n) * 4, Some(&pool)).expect("alloc async");
    assert_ne!(b.address(), a_address);
    s.synchronize().expect("synchronize");
    assert_eq!(read_u32(&s, &out), vec![21; 64]);
    // Once the stream has passed the free, the block is reused.
    let c = s.alloc_async(u64::from(n) * 4, Some(&pool)).expect("alloc async");
    assert_eq!(c.address(), a_address);
    assert_eq!(pool.reserved_bytes(), 512);
    assert_eq!(dev.resolve(c.address() + 10).map(|r| r.offset), Some(10));
    drop((b, c));
    pool.trim_to(0);
    assert_eq!(pool.reserved_bytes(), 0);
    // The default pool works the same way.
    let d = s.alloc_async(1000, None).expect("default pool");
    s.memset(&d, 0, 1000, Pattern::U8(7)).expect("memset");
    let mut back = vec![0u8; 1000];
    s.copy_from_buffer(&d, 0, &mut back).expect("read");
    assert!(back.iter().all(|&v| v == 7));
    s.free_async(d).expect("free");
    s.synchronize().expect("synchronize");
    assert_no_validation_messages();
}

/// The CPU model of a memset: `len` bytes from `offset` become repetitions of `pattern`.
fn memset_model(mem: &mut [u8], offset: usize, len: usize, pattern: Pattern) {
    let element: Vec<u8> = match pattern {
        Pattern::U8(v) => vec![v],
        Pattern::U16(v) => v.to_le_bytes().to_vec(),
        Pattern::U32(v) => v.to_le_bytes().to_vec(),
    };
    for (i, byte) in mem[offset..offset + len].iter_mut().enumerate() {
        *byte = element[i % element.len()];
    }
}

#[test]
fn memset_patterns_at_every_alignment() {
    let Some(dev) = open_or_skip() else { return };
    let s = dev.create_stream(StreamKind::Blocking, 0).expect("stream");
    let buf = dev.alloc(96).expect("alloc");
    let mut model = vec![0xaau8; 96];
    dev.upload(&buf, 0, &model).expect("upload");
    let cases = [
        (3, 9, Pattern::U8(0x11)),
        (13, 1, Pattern::U8(0x22)),
        (18, 10, Pattern::U16(0x3344)),
        (30, 4, Pattern::U16(0x5566)),
        (36, 20, Pattern::U32(0x778899aa)),
        (60, 0, Pattern::U8(0xff)),
        (64, 31, Pattern::U8(0xbb)),
    ];
    for (offset, len, pattern) in cases {
        s.memset(&buf, offset, len, pattern).expect("memset");
        memset_model(&mut model, offset as usize, len as usize, pattern);
    }
    let mut got = vec![0u8; 96];
    s.copy_from_buffer(&buf, 0, &mut got).expect("read");
    assert_eq!(got, model);
    let err = s.memset(&buf, 1, 4, Pattern::U16(0)).expect_err("misaligned");
    assert!(matches!(err, Error::InvalidUse(_)), "{err}");
    let err = s.memset(&buf, 0, 6, Pattern::U32(0)).expect_err("odd length");
    assert!(matches!(err, Error::InvalidUse(_)), "{err}");
    let err = s.memset(&buf, 90, 8, Pattern::U8(0)).expect_err("out of bounds");
    assert!(matches!(err, Error::OutOfBounds { .. }), "{err}");
    assert_no_validation_messages();
}

/// The CPU model of a pitched 3-D copy.
fn copy_3d_model(
    src: &[u8],
    (so, sp, sh): (u64, u64, u64),
    dst: &mut [u8],
    (d_o, dp, dh): (u64, u64, u64),
    e: Extent3d,
) {
    for z in 0..e.depth {
        for y in 0..e.height {
            let s = (so + z * sp * sh + y * sp) as usize;
            let d = (d_o + z * dp * dh + y * dp) as usize;
            let w = e.width as usize;
            dst[d..d + w].copy_from_slice(&src[s..s + w]);
        }
    }
}

#[test]
fn pitched_2d_and_3d_copies() {
    let Some(dev) = open_or_skip() else { return };
    let s = dev.create_stream(StreamKind::Blocking, 0).expect("stream");
    let host: Vec<u8> = (0..4000u32).map(|i| (i * 31 % 251) as u8).collect();
    let extent = Extent3d { width: 13, height: 5, depth: 3 };
    let host_layout = (7u64, 20u64, 6u64);
    let a = dev.alloc(2000).expect("alloc");
    let b = dev.alloc(2000).expect("alloc");
    let a_layout = (3u64, 32u64, 7u64);
    let b_layout = (100u64, 17u64, 5u64);
    let region = |buffer, (offset, pitch, rows_per_slice): (u64, u64, u64)| BufferRegion {
        buffer,
        offset,
        pitch,
        rows_per_slice,
    };
    let host_region = HostLayout { offset: 7, pitch: 20, rows_per_slice: 6 };

    s.copy_3d_from_host(&host, host_region, region(&a, a_layout), extent).expect("host to a");
    s.copy_3d(region(&a, a_layout), region(&b, b_layout), extent).expect("a to b");
    let mut out = vec![0u8; 4000];
    s.copy_3d_to_host(region(&b, b_layout), &mut out, host_region, extent).expect("b to host");

    let mut model_a = vec![0u8; 2000];
    copy_3d_model(&host, host_layout, &mut model_a, a_layout, extent);
    let mut model_b = vec![0u8; 2000];
    copy_3d_model(&model_a, a_layout, &mut model_b, b_layout, extent);
    let mut model_out = vec![0u8; 4000];
    copy_3d_model(&model_b, b_layout, &mut model_out, host_layout, extent);
    assert_eq!(dev.download(&a, 0, 2000).expect("a"), model_a);
    assert_eq!(dev.download(&b, 0, 2000).expect("b"), model_b);
    assert_eq!(out, model_out);
    // A 2-D copy is a one-slice 3-D copy.
    let e2 = Extent3d::rows(8, 4);
    s.copy_3d(region(&a, (0, 40, 4)), region(&b, (1, 9, 4)), e2).expect("2-D");
    copy_3d_model(&model_a.clone(), (0, 40, 4), &mut model_b, (1, 9, 4), e2);
    assert_eq!(dev.download(&b, 0, 2000).expect("b"), model_b);
    // Rows wider than their pitch, and regions past the end, are errors.
    let err = s.copy_3d(region(&a, (0, 7, 4)), region(&b, (0, 40, 4)), e2).expect_err("pitch");
    assert!(matches!(err, Error::InvalidUse(_)), "{err}");
    let far = Extent3d { width: 10, height: 10, depth: 10 };
    let err = s.copy_3d(region(&a, (0, 40, 10)), region(&b, (0, 10, 10)), far).expect_err("end");
    assert!(matches!(err, Error::OutOfBounds { .. }), "{err}");
    assert_no_validation_messages();
}

#[test]
fn kernels_write_registered_and_managed_host_memory_directly() {
    let Some(dev) = open_or_skip() else { return };
    let p = affine(&dev);
    let s = dev.create_stream(StreamKind::Blocking, 0).expect("stream");
    let n = 64u32;
    let src = dev.alloc(u64::from(n) * 4).expect("alloc");
    let input: Vec<u32> = (0..n).map(|i| i * i).collect();
    dev.upload(&src, 0, &bytes(&input)).expect("upload");
    let expected: Vec<u32> = input.iter().map(|v| v * 3 + 2).collect();

    if dev.can_register_host() {
        // Memory the host owns: not page-aligned, registered as is.
        let mut host = vec![0u32; n as usize + 3];
        let ptr = host[3..].as_mut_ptr().cast::<u8>();
        // SAFETY: `host` outlives the buffer, which is dropped after the stream is
        // synchronised below.
        let registered = unsafe { dev.register_host(ptr, n as usize * 4) }.expect("register");
        assert_eq!(registered.kind(), MemoryKind::Registered);
        assert_eq!(registered.address() % 4, 0);
        enqueue_affine(&s, &p, &src, &registered, n, 3, 2);
        s.synchronize().expect("synchronize");
        drop(registered);
        assert_eq!(&host[3..], &expected[..], "the kernel wrote host memory, no copy");
        assert_eq!(&host[..3], &[0, 0, 0]);
    } else {
        eprintln!("NOTE: the device lacks VK_EXT_external_memory_host; registration not tested");
    }

    let managed = dev.alloc_managed(u64::from(n) * 4).expect("managed");
    assert!(managed.is_host_visible());
    managed.write_mapped(0, &bytes(&input)).expect("host write");
    enqueue_affine(&s, &p, &managed, &managed, n, 3, 2);
    s.synchronize().expect("synchronize");
    let mut back = vec![0u8; n as usize * 4];
    managed.read_mapped(0, &mut back).expect("host read");
    assert_eq!(words(&back), expected);

    let pinned = dev.alloc_host(16).expect("pinned");
    assert_eq!(pinned.kind(), MemoryKind::Host);
    let resolved = dev.resolve(pinned.address() + 15).expect("resolve");
    assert!(resolved.buffer.same_allocation(&pinned) && resolved.offset == 15);
    assert!(dev.resolve(pinned.address() + 16).is_none_or(|r| !r.buffer.same_allocation(&pinned)));
    assert_no_validation_messages();
}

#[test]
fn event_times_are_positive_and_ordered() {
    let Some(dev) = open_or_skip() else { return };
    if !dev.info().timestamps {
        eprintln!("NOTE: the queue has no timestamps; elapsed times not tested");
        return;
    }
    let spin = dev.create_program(&spin_kernel(), "main", &NEEDS).expect("spin");
    let s = dev.create_stream(StreamKind::NonBlocking, 0).expect("stream");
    let out = dev.alloc(4).expect("alloc");
    let mut params = out.address().to_le_bytes().to_vec();
    params.extend(20_000u32.to_le_bytes());
    let events: Vec<Event> = (0..3).map(|_| dev.create_event(true).expect("event")).collect();
    let cfg = LaunchConfig { block: [64, 1, 1], ..LaunchConfig::default() };
    s.record(&events[0]).expect("record");
    s.launch_with_params(&spin, &cfg, &params, &[&out]).expect("launch");
    s.record(&events[1]).expect("record");
    s.launch_with_params(&spin, &cfg, &params, &[&out]).expect("launch");
    s.record(&events[2]).expect("record");
    events[2].synchronize().expect("event synchronize");
    let first = Event::elapsed_ms(&events[0], &events[1]).expect("elapsed");
    let both = Event::elapsed_ms(&events[0], &events[2]).expect("elapsed");
    assert!(first > 0.0 && both > first, "{first} ms, then {both} ms");
    let untimed = dev.create_event(false).expect("event");
    s.record(&untimed).expect("record");
    s.synchronize().expect("synchronize");
    let err = Event::elapsed_ms(&events[0], &untimed).expect_err("no timing");
    assert!(matches!(err, Error::InvalidUse(_)), "{err}");
    assert_no_validation_messages();
}

#[test]
fn a_buffer_dropped_in_flight_is_not_reused_under_the_launch() {
    let Some(dev) = open_or_skip() else { return };
    let p = affine(&dev);
    let s = dev.create_stream(StreamKind::NonBlocking, 0).expect("stream");
    let n = 4096u32;
    let src = dev.alloc(u64::from(n) * 4).expect("alloc");
    dev.upload(&src, 0, &bytes(&vec![1; n as usize])).expect("upload");
    let target = dev.alloc(u64::from(n) * 4).expect("alloc");
    let freed_address = target.address();
    hold(&s, 100);
    enqueue_affine(&s, &p, &src, &target, n, 1, 0x5000);
    drop(target);
    // Memory allocated now must not be the dropped buffer's: the launch still writes it.
    let fresh: Vec<Buffer> = (0..8).map(|_| dev.alloc(u64::from(n) * 4).expect("alloc")).collect();
    for f in &fresh {
        assert_ne!(f.address(), freed_address, "memory reused under a pending launch");
        dev.upload(f, 0, &bytes(&vec![7; n as usize])).expect("fill");
    }
    s.synchronize().expect("synchronize");
    for f in &fresh {
        assert_eq!(
            words(&dev.download(f, 0, u64::from(n) * 4).expect("read")),
            vec![7; n as usize]
        );
    }
    // Once the stream has passed the launch, the memory is free again.
    assert!(dev.resolve(freed_address).is_none());
    assert_no_validation_messages();
}

#[test]
fn host_functions_run_in_stream_order() {
    let Some(dev) = open_or_skip() else { return };
    let p = affine(&dev);
    let s = dev.create_stream(StreamKind::Blocking, 0).expect("stream");
    let buf = dev.alloc_managed(128).expect("managed");
    buf.write_mapped(0, &bytes(&[2; 32])).expect("write");
    enqueue_affine(&s, &p, &buf, &buf, 32, 10, 0);
    // The host function sees the kernel's result and changes it before the next kernel.
    let seen = Arc::new(AtomicBool::new(false));
    let (b2, seen2) = (buf.clone(), Arc::clone(&seen));
    s.launch_host_func(Box::new(move || {
        let mut w = vec![0u8; 128];
        b2.read_mapped(0, &mut w).expect("read");
        seen2.store(words(&w) == vec![20; 32], Ordering::SeqCst);
        b2.write_mapped(0, &bytes(&[5; 32])).expect("write");
    }))
    .expect("host function");
    enqueue_affine(&s, &p, &buf, &buf, 32, 3, 1);
    s.synchronize().expect("synchronize");
    assert!(seen.load(Ordering::SeqCst), "the host function ran after the first kernel");
    let mut w = vec![0u8; 128];
    buf.read_mapped(0, &mut w).expect("read");
    assert_eq!(words(&w), vec![16; 32]);
    assert!(s.query().expect("query"));
    assert_no_validation_messages();
}

#[test]
fn device_loss_is_reported_by_every_later_call_and_a_new_device_opens() {
    let Some(dev) = open_or_skip() else { return };
    let p = affine(&dev);
    let s = dev.create_stream(StreamKind::Blocking, 0).expect("stream");
    let buf = dev.alloc(128).expect("alloc");
    enqueue_affine(&s, &p, &buf, &buf, 32, 1, 1);
    s.synchronize().expect("synchronize");
    dev.simulate_device_loss();
    assert!(dev.is_lost());
    let cfg = LaunchConfig { block: [32, 1, 1], ..LaunchConfig::default() };
    assert!(matches!(s.launch(&p, &cfg, &[]), Err(Error::DeviceLost)));
    assert!(matches!(s.synchronize(), Err(Error::DeviceLost)));
    assert!(matches!(dev.alloc(16), Err(Error::DeviceLost)));
    assert!(matches!(dev.upload(&buf, 0, &[1]), Err(Error::DeviceLost)));
    assert!(matches!(dev.create_stream(StreamKind::Blocking, 0), Err(Error::DeviceLost)));
    assert!(matches!(dev.create_event(true), Err(Error::DeviceLost)));
    assert!(matches!(dev.synchronize(), Err(Error::DeviceLost)));
    drop((s, buf, p, dev));
    let again = Device::open(&DeviceSelector::Default).expect("a new device");
    let buf = again.alloc(4).expect("alloc");
    again.upload(&buf, 0, &[1, 2, 3, 4]).expect("upload");
    assert_eq!(again.download(&buf, 0, 4).expect("download"), [1, 2, 3, 4]);
    assert_no_validation_messages();
}

/// A copy between overlapping ranges of one allocation (`cuMemcpyDtoD` of an array onto
/// itself shifted) gives what `memmove` gives, in both directions, where Vulkan forbids
/// overlapping copy regions; copies that only touch stay plain.
#[test]
fn overlapping_copies_within_one_allocation_move_as_memmove_does() {
    let Some(dev) = open_or_skip() else { return };
    let s = dev.create_stream(StreamKind::Blocking, 0).expect("stream");
    let initial: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(37) ^ (i >> 3)) as u8).collect();
    let buf = dev.alloc(initial.len() as u64).expect("alloc");
    let mut model = initial.clone();
    s.copy_to_buffer(&buf, 0, &initial).expect("upload");
    // Forward and backward overlaps, an exact self-copy, and ranges that only touch.
    for (from, to, len) in [(0, 100, 3000), (900, 13, 2500), (512, 512, 1024), (0, 2048, 2048)] {
        s.copy_buffer(&buf, from, &buf, to, len).expect("copy");
        model.copy_within(from as usize..(from + len) as usize, to as usize);
    }
    let mut got = vec![0u8; initial.len()];
    s.copy_from_buffer(&buf, 0, &mut got).expect("download");
    assert!(got == model, "the copies differ from memmove's");
    assert_no_validation_messages();
}

/// On a device that runs kernels in this process (lavapipe), every allocation ptxvk
/// makes lies in the confinement range, and registered host memory (the program's own,
/// imported) is the one kind outside it, listed as such; a freed piece comes back
/// zero-filled. On other devices there is no range.
#[test]
fn allocations_of_a_cpu_device_lie_in_its_confinement_range() {
    let Some(dev) = open_or_skip() else { return };
    let Some(range) = dev.confinement() else {
        assert_ne!(dev.info().device_type, ptxvk_vk::DeviceType::Cpu, "a CPU device confines");
        return;
    };
    let inside = |b: &Buffer| {
        b.address() >= range.start && b.address() + b.size() <= range.start + range.size
    };
    let buffers = [
        dev.alloc(1).expect("alloc"),
        dev.alloc(3 << 20).expect("alloc 3 MiB"),
        dev.alloc_host(100).expect("host alloc"),
        dev.alloc_managed(5000).expect("managed alloc"),
    ];
    for b in &buffers {
        assert!(inside(b), "{:#x}+{} outside {range:?}", b.address(), b.size());
        assert_eq!(b.address() % ptxvk_vk::BUFFER_ALIGNMENT, 0);
    }
    assert!(dev.allocations_outside_confinement().is_empty());
    // Write a pattern, free, allocate the same size again: zero, wherever it lands.
    let first = dev.alloc(8192).expect("alloc");
    dev.upload(&first, 0, &[0xa5; 8192]).expect("upload");
    drop(first);
    let again = dev.alloc(8192).expect("alloc");
    assert!(inside(&again));
    assert!(dev.download(&again, 0, 8192).expect("download").iter().all(|&b| b == 0));
    if dev.can_register_host() {
        let mut host = vec![0u32; 2048];
        // SAFETY: `host` outlives the registration, which is dropped first.
        let registered =
            unsafe { dev.register_host(host.as_mut_ptr().cast(), 8192) }.expect("register");
        assert!(!inside(&registered));
        let outside = dev.allocations_outside_confinement();
        assert_eq!(outside.len(), 1);
        assert_eq!(outside[0].start, registered.address());
        // The program's host memory around the registered range is not the allocation's.
        assert_eq!(outside[0].size, 8192);
        drop(registered);
        drop(host);
    }
    // An exportable allocation is a memory object of its own, mapped from a page
    // boundary: a confined kernel may reach to the end of its last page (as a kernel on
    // a CUDA GPU runs a little past a small allocation without a fault), not further.
    if dev.can_export_memory() {
        let exported = dev.alloc_exportable(40).expect("exportable alloc");
        assert!(!inside(&exported));
        let outside = dev.allocations_outside_confinement();
        let own = outside.iter().find(|r| r.start == exported.address()).expect("listed");
        assert_eq!(exported.address() % 4096, 0);
        assert_eq!(own.size, 4096, "the reach of a 40-byte exportable allocation");
    }
}
