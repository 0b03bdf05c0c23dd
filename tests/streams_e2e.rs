//! The asynchronous Rust API on real compiler output: launches enqueued on streams with no
//! synchronisation in between, buffers dropped while their launch is pending, slices as
//! arguments, `half` elements, and a failed `assert` of an asynchronous launch reported by
//! the next synchronisation. Expected values come from CPU models.

mod common;

use std::time::Duration;

use common::*;
use ptxvk::half::f16;
use ptxvk::{Arg, DeviceBuffer, Error, StreamKind};

fn vector_add_ptx() -> String {
    std::fs::read_to_string(repo().join("tests/kernels/vector_add.nvcc.sm_80.ptx")).expect("ptx")
}

#[test]
fn chained_launches_on_a_stream_need_no_synchronisation_between_them() {
    let Some(device) = device() else { return };
    let module = ptxvk::Module::from_ptx(&device, &vector_add_ptx()).expect("module");
    let add = module.kernel("vector_add").expect("kernel");
    let stream = device.create_stream(StreamKind::NonBlocking).expect("stream");
    let n = 1000usize;
    let a0: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b0: Vec<f32> = (0..n).map(|i| (n - i) as f32).collect();
    let a = device.zeroed::<f32>(n).expect("a");
    let b = device.zeroed::<f32>(n).expect("b");
    let c = device.zeroed::<f32>(n).expect("c");
    a.as_slice().copy_from_async(&stream, &a0).expect("upload a");
    b.as_slice().copy_from_async(&stream, &b0).expect("upload b");
    let (mut ma, mut mc) = (a0.clone(), vec![0f32; n]);
    for _ in 0..40 {
        // c = a + b; a = c + b
        add.launch_on(
            &stream,
            4,
            256,
            0,
            &[(&a).into(), (&b).into(), (&c).into(), Arg::from(n as i32)],
        )
        .expect("launch");
        add.launch_on(
            &stream,
            4,
            256,
            0,
            &[(&c).into(), (&b).into(), (&a).into(), Arg::from(n as i32)],
        )
        .expect("launch");
        for i in 0..n {
            mc[i] = ma[i] + b0[i];
            ma[i] = mc[i] + b0[i];
        }
    }
    stream.synchronize().expect("synchronize");
    assert_eq!(a.to_vec().expect("a"), ma);
    assert_eq!(c.to_vec().expect("c"), mc);

    // Slices as arguments: the second half of `b` plus the first half of `a`.
    let half = n / 2;
    let out = device.zeroed::<f32>(half).expect("out");
    add.launch(
        2,
        256,
        0,
        &[
            a.slice(0..half).expect("slice").into(),
            b.slice(half..n).expect("slice").into(),
            (&out).into(),
            Arg::from(half as i32),
        ],
    )
    .expect("launch on slices");
    let want: Vec<f32> = (0..half).map(|i| ma[i] + b0[half + i]).collect();
    assert_eq!(out.to_vec().expect("out"), want);
    assert!(a.slice(10..n + 1).is_err());
}

/// Holds `stream` on the host for `ms` milliseconds.
fn hold(stream: &ptxvk::Stream, ms: u64) {
    stream
        .launch_host_func(Box::new(move || std::thread::sleep(Duration::from_millis(ms))))
        .expect("host function");
}

/// With a launch argument that was only an address, the dropped output buffer's memory was
/// free for the next allocation while the kernel was still to write it.
#[test]
fn a_buffer_dropped_while_its_launch_is_pending_is_not_reused() {
    let Some(device) = device() else { return };
    let module = ptxvk::Module::from_ptx(&device, &vector_add_ptx()).expect("module");
    let add = module.kernel("vector_add").expect("kernel");
    let stream = device.create_stream(StreamKind::NonBlocking).expect("stream");
    let n = 4096usize;
    let ones = device.buffer_from(&vec![1.0f32; n]).expect("ones");
    let out = device.zeroed::<f32>(n).expect("out");
    let address = out.address();
    hold(&stream, 150);
    add.launch_on(
        &stream,
        16,
        256,
        0,
        &[(&ones).into(), (&ones).into(), (&out).into(), Arg::from(n as i32)],
    )
    .expect("launch");
    drop(out);
    let fresh: Vec<DeviceBuffer<f32>> =
        (0..4).map(|_| device.buffer_from(&vec![7.0f32; n]).expect("fresh")).collect();
    assert!(fresh.iter().all(|f| f.address() != address), "memory reused under a pending launch");
    stream.synchronize().expect("synchronize");
    for f in &fresh {
        assert!(f.to_vec().expect("read").iter().all(|&v| v == 7.0));
    }
}

#[test]
fn half_precision_elements_round_trip() {
    let Some(device) = device() else { return };
    let values: Vec<f16> = (0..300).map(|i| f16::from_f32(i as f32 / 7.0 - 20.0)).collect();
    let buf = device.buffer_from(&values).expect("f16 buffer");
    assert_eq!(buf.to_vec().expect("read"), values);
    buf.slice(100..103)
        .expect("slice")
        .copy_from(&[f16::NAN, f16::INFINITY, f16::ZERO])
        .expect("write");
    let back = buf.to_vec().expect("read");
    assert!(back[100].is_nan() && back[101] == f16::INFINITY && back[102] == f16::ZERO);
    assert_eq!(&back[..100], &values[..100]);
    assert_eq!(&back[103..], &values[103..]);
}

#[test]
fn a_failed_assert_of_an_asynchronous_launch_is_reported_at_synchronize() {
    let Some(device) = device() else { return };
    let path = variants("syscalls").into_iter().next().expect("a syscalls variant");
    let module = load(&device, &path);
    let kernel = module.kernel("check_positive").expect("kernel");
    let stream = device.create_stream(StreamKind::Blocking).expect("stream");
    let good: Vec<i32> = (1..=70).collect();
    let mut bad = good.clone();
    bad[37] = -4;
    let good_buf = device.buffer_from(&good).expect("good");
    let bad_buf = device.buffer_from(&bad).expect("bad");
    let launch = |buf: &DeviceBuffer<i32>| {
        kernel.launch_on(&stream, 4, 32, 0, &[buf.into(), Arg::from(70i32)]).expect("enqueue")
    };
    launch(&good_buf);
    stream.synchronize().expect("all positive");
    launch(&good_buf);
    launch(&bad_buf);
    launch(&good_buf);
    // `ptxvk::Error` turns the runtime's deferred error back into the kernel failure.
    let err = Error::from(stream.synchronize().expect_err("the assertion is reported"));
    let Error::KernelFailed { message, .. } = &err else { panic!("{err:?}") };
    assert!(
        message.contains("Assertion `v > 0` failed") && message.contains("thread: [5,0,0]"),
        "{message}"
    );
    // Reported once; the stream goes on.
    launch(&good_buf);
    stream.synchronize().expect("reported once");
}
