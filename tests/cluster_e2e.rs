//! Thread-block clusters (issue #19): `tests/kernels/cluster.cu` (nvcc sm_90: cooperative
//! groups' cluster API and inline PTX) runs with clusters of one CTA, which ptxvk makes
//! exact (`lower/src/sema/cluster.rs`), against a CPU model of that; a kernel that
//! requires clusters of two CTAs is rejected with a diagnostic that says so.

mod common;

use ptxvk::{Arg, Module};

#[test]
fn clusters_of_one_cta_run_and_larger_ones_are_refused() {
    let Some(device) = common::device() else { return };
    let path = common::repo().join("tests/kernels/cluster.nvcc.sm_90.ptx");
    let text = std::fs::read_to_string(&path).expect("the PTX");
    let module = Module::from_ptx(&device, &text).expect("the module loads");

    let (blocks, threads) = (3u32, 64u32);
    let out = device.zeroed::<u32>((blocks * threads * 12) as usize).expect("out");
    let counter = device.zeroed::<u32>(blocks as usize).expect("counter");
    let kernel = module.kernel("cluster_one").expect("cluster_one");
    kernel
        .launch([blocks, 1, 1], [threads, 1, 1], 0, &[Arg::from(&out), Arg::from(&counter)])
        .expect("cluster_one");
    let got = out.to_vec().expect("read");
    for b in 0..blocks {
        let mut tickets = Vec::new();
        for t in 0..threads {
            let o = &got[(12 * (b * threads + t)) as usize..][..12];
            let want_fixed = [3 * ((t + 1) % threads) + b, 0, 1, 0, 1, b, blocks, 1, 0];
            assert_eq!(&o[..9], want_fixed.as_slice(), "block {b} thread {t}");
            assert_eq!((o[10], o[11]), (3 * t + b, 7), "block {b} thread {t}");
            tickets.push(o[9]);
        }
        tickets.sort_unstable();
        assert_eq!(tickets, (0..threads).collect::<Vec<_>>(), "block {b}'s atomic tickets");
    }
    assert_eq!(counter.to_vec().expect("counter"), vec![threads; blocks as usize]);

    let out = device.zeroed::<u32>(64).expect("out");
    let kernel = module.kernel("cluster_implicit").expect("cluster_implicit");
    kernel.launch([2, 1, 1], [32, 1, 1], 0, &[Arg::from(&out)]).expect("cluster_implicit");
    assert_eq!(out.to_vec().expect("read"), vec![1; 64], "not explicit, one CTA");

    // The same kernel requiring clusters of two CTAs: refused, with the reason.
    let two = text.replacen(".reqnctapercluster 1, 1, 1", ".reqnctapercluster 2, 1, 1", 1);
    assert_ne!(two, text, "cluster_one declares its cluster shape");
    let module = Module::from_ptx(&device, &two).expect("the rest of the module loads");
    match module.kernel("cluster_one") {
        Err(ptxvk::Error::Ptx { rendered, .. }) => assert!(
            rendered.contains("a cluster of 2 CTAs (`.reqnctapercluster`) is not supported yet"),
            "{rendered}"
        ),
        Err(e) => panic!("cluster_one with clusters of two: {e}"),
        Ok(_) => panic!("clusters of two CTAs must be refused"),
    }
}
