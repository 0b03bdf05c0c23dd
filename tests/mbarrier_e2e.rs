//! mbarrier objects end to end (issue #19): `tests/kernels/mbarrier.cu`, built by nvcc
//! for sm_80, sm_89 and sm_90 (inline `mbarrier` instructions through every state,
//! libcu++'s block-scope `cuda::barrier` with `arrive_and_wait`, split arrive/wait and
//! `arrive_and_drop`, a block-scope `cuda::pipeline`, and `cuda::memcpy_async` on a
//! barrier), against CPU models written from the ISA; and a wait that cannot complete
//! under ptxvk's in-step execution ends the launch with an error that says why.

mod common;

use ptxvk::{Arg, Device, Module};

fn variants() -> Vec<(&'static str, std::path::PathBuf)> {
    ["sm_80", "sm_89", "sm_90"]
        .iter()
        .map(|a| (*a, common::repo().join(format!("tests/kernels/mbarrier.nvcc.{a}.ptx"))))
        .collect()
}

/// An mbarrier as PTX ISA 9.2 §9.7.13.15 describes it.
struct Mbarrier {
    phase: u32,
    pending: u32,
    expected: u32,
    tx: i64,
}

/// What an arrive returns: the phase it arrived on and the pending count before it.
#[derive(Clone, Copy)]
struct State {
    phase: u32,
    pending: u32,
}

impl Mbarrier {
    fn init(count: u32) -> Mbarrier {
        Mbarrier { phase: 0, pending: count, expected: count, tx: 0 }
    }

    fn complete_if_done(&mut self) {
        if self.pending == 0 && self.tx == 0 {
            self.phase += 1;
            self.pending = self.expected;
        }
    }

    fn arrive(&mut self, count: u32, drop: bool, complete: bool) -> State {
        let state = State { phase: self.phase, pending: self.pending };
        self.pending -= count;
        if drop {
            self.expected -= count;
        }
        if complete {
            self.complete_if_done();
        }
        state
    }

    fn tx(&mut self, delta: i64) {
        self.tx += delta;
        self.complete_if_done();
    }

    fn done(&self, s: State) -> u32 {
        u32::from(self.phase != s.phase)
    }

    fn parity_done(&self, parity: u32) -> u32 {
        u32::from(self.phase % 2 != parity)
    }
}

/// The kernel's `arrive_n`: one arrive-on of count `n` on sm_90 (`counted`), else `n`
/// arrive-ons of one (the count operand needs sm_90, PTX ISA 9.2 §9.7.13.15), the
/// state of the last returned.
fn arrive_n(b: &mut Mbarrier, n: u32, counted: bool) -> State {
    if counted {
        return b.arrive(n, false, true);
    }
    let mut state = b.arrive(1, false, true);
    for _ in 1..n {
        state = b.arrive(1, false, true);
    }
    state
}

/// What `mbarrier_ops` writes (the kernel's header comment), on sm_90 (`tx`) or not.
fn mbarrier_ops_model(tx: bool) -> Vec<u32> {
    let mut out = vec![0u32; 32];
    let mut b = Mbarrier::init(3);
    let s0 = b.arrive(1, false, true);
    out[0] = b.done(s0);
    out[1] = s0.pending;
    let s1 = arrive_n(&mut b, 2, tx);
    out[2] = b.done(s0);
    out[3] = s1.pending;
    out[4] = b.parity_done(0);
    out[5] = b.parity_done(1);
    let s2 = b.arrive(1, true, true);
    out[6] = b.done(s2);
    out[7] = s2.pending;
    let s3 = arrive_n(&mut b, 2, tx);
    out[8] = b.done(s2);
    out[9] = s3.pending;
    if tx {
        b.tx(64);
        let s4 = arrive_n(&mut b, 2, tx);
        out[10] = b.done(s4);
        b.tx(-40);
        out[11] = b.done(s4);
        b.tx(-24);
        out[12] = b.done(s4);
        b.tx(16);
        let s5 = b.arrive(1, false, true);
        out[13] = b.done(s5);
        out[14] = s5.pending;
        b.tx(-16);
        out[15] = b.done(s5);
    } else {
        let s4 = arrive_n(&mut b, 2, tx);
        out[10] = 1;
        out[11] = 1;
        out[12] = b.done(s4);
        let s5 = b.arrive(1, false, true);
        out[13] = b.done(s5);
        out[14] = s5.pending;
        out[15] = 0;
    }
    let s6 = b.arrive(1, false, true);
    out[16] = b.done(s6);
    out[17] = b.parity_done(0);
    out[18] = b.parity_done(1);
    let s7 = b.arrive(1, false, false);
    out[19] = b.done(s7);
    out[20] = s7.pending;
    let mut b = Mbarrier::init(1);
    let s8 = b.arrive(1, false, true);
    out[21] = b.done(s8);
    out[22] = s8.pending;
    out[23] = 0xb00f;
    out
}

fn run_variant(device: &Device, arch: &str, path: &std::path::Path) {
    let module = common::load(device, path);
    let name = path.display();
    let mut rng = common::Rng(0x3b4c);

    let out = device.zeroed::<u32>(32).expect("out");
    module
        .kernel("mbarrier_ops")
        .expect("kernel")
        .launch([1, 1, 1], [1, 1, 1], 0, &[Arg::from(&out)])
        .expect("mbarrier_ops");
    assert_eq!(
        out.to_vec().expect("read"),
        mbarrier_ops_model(arch == "sm_90"),
        "{name} mbarrier_ops"
    );

    let (blocks, threads) = (3usize, 96usize);
    let n = blocks * threads;
    let data: Vec<u32> = (0..n).map(|_| rng.next_u32()).collect();
    let input = device.buffer_from(&data).expect("in");
    let out = device.zeroed::<u32>(n).expect("out");
    let args = [Arg::from(&input), Arg::from(&out)];
    let grid = [blocks as u32, 1, 1];
    let block = [threads as u32, 1, 1];
    module
        .kernel("block_barrier")
        .expect("kernel")
        .launch(grid, block, 0, &args)
        .expect("block_barrier");
    let got = out.to_vec().expect("read");
    for b in 0..blocks {
        let input = &data[b * threads..(b + 1) * threads];
        let mut v = vec![0u32; threads];
        for r in 0..4u32 {
            for t in 0..threads {
                v[t] = v[t].wrapping_mul(3).wrapping_add(input[t]).wrapping_add(r);
            }
            let s = v.clone();
            for t in 0..threads {
                v[t] = v[t].wrapping_add(s[(t + r as usize + 1) % threads]);
            }
        }
        assert_eq!(
            &got[b * threads..(b + 1) * threads],
            v.as_slice(),
            "{name} block_barrier block {b}"
        );
    }

    module
        .kernel("split_barrier")
        .expect("kernel")
        .launch(grid, block, 0, &args)
        .expect("split_barrier");
    let got = out.to_vec().expect("read");
    for (g, &value) in got.iter().enumerate() {
        let (b, t) = (g / threads, g % threads);
        let want = data[g].wrapping_mul(7).wrapping_add(data[b * threads + threads - 1 - t]);
        assert_eq!(value, want, "{name} split_barrier [{g}]");
    }

    let out = device.zeroed::<u32>(2 * 64).expect("out");
    module
        .kernel("dropping")
        .expect("kernel")
        .launch([2, 1, 1], [64, 1, 1], 0, &[Arg::from(&out)])
        .expect("dropping");
    let got = out.to_vec().expect("read");
    for (g, &value) in got.iter().enumerate() {
        let t = (g % 64) as u32;
        let want = if t >= 32 { 0xdead } else { (0..3).map(|r| r * 100 + 31 - t).sum() };
        assert_eq!(value, want, "{name} dropping [{g}]");
    }

    let words: Vec<u32> = (0..2 * 64).map(|_| rng.next_u32()).collect();
    let input = device.buffer_from(&words).expect("in");
    let out = device.zeroed::<u32>(2 * 64).expect("out");
    module
        .kernel("barrier_copy")
        .expect("kernel")
        .launch([2, 1, 1], [64, 1, 1], 0, &[Arg::from(&input), Arg::from(&out)])
        .expect("barrier_copy");
    for (g, &value) in out.to_vec().expect("read").iter().enumerate() {
        let (b, t) = (g / 64, g % 64);
        assert_eq!(
            value,
            words[64 * b + 63 - t].wrapping_add(t as u32),
            "{name} barrier_copy [{g}]"
        );
    }
}

/// `block_pipeline`: its own test, because under racecheck lavapipe takes about a
/// minute to compile the sm_80 build (libcu++'s waits back off in a loop nest that
/// predication keeps whole), which `make test`'s racecheck run skips.
fn run_pipeline(device: &Device, path: &std::path::Path) {
    let module = common::load(device, path);
    let name = path.display();
    let mut rng = common::Rng(0x91e);
    let blocks = 3;
    let floats: Vec<f32> =
        (0..512 * blocks).map(|_| (rng.next_u32() % 20001) as f32 / 64.0 - 150.0).collect();
    let input = device.buffer_from(&floats).expect("in");
    let out = device.zeroed::<f32>(blocks).expect("out");
    module
        .kernel("block_pipeline")
        .expect("kernel")
        .launch([blocks as u32, 1, 1], [128, 1, 1], 0, &[Arg::from(&input), Arg::from(&out)])
        .expect("block_pipeline");
    for (b, &g) in out.to_vec().expect("read").iter().enumerate() {
        let want = (0..128).fold(0f32, |total, t| {
            total + (0..4).fold(0f32, |sum, c| sum + floats[512 * b + 128 * c + t])
        });
        assert_eq!(g.to_bits(), want.to_bits(), "{name} block_pipeline block {b}: {g} want {want}");
    }
}

#[test]
fn a_block_scope_pipeline_of_memcpy_async_sums_in_order() {
    let Some(device) = common::device() else { return };
    for (_, path) in variants() {
        run_pipeline(&device, &path);
    }
}

#[test]
fn mbarriers_and_block_barriers_follow_the_isa() {
    let Some(device) = common::device() else { return };
    for (arch, path) in variants() {
        run_variant(&device, arch, &path);
    }
}

/// Warp 1 waits on a barrier that only warp 0 arrives on, after the wait in program
/// order. NVIDIA's warps run independently and finish; so do ptxvk's, whose block
/// scheduler (`pass::schedule`) lets warp 0 run while warp 1 polls.
const LATER: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry later(.param .u64 out)
{
    .reg .pred %p<4>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    .shared .align 8 .b64 bar;

    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra READY;
    mbarrier.init.shared.b64 [bar], 32;
READY:
    bar.sync 0;
    setp.lt.u32 %p2, %r1, 32;
    @%p2 bra ARRIVE;
WAIT:
    mbarrier.try_wait.parity.shared.b64 %p3, [bar], 0;
    @!%p3 bra WAIT;
ARRIVE:
    @%p2 mbarrier.arrive.shared.b64 %rd1, [bar];
    ld.param.u64 %rd2, [out];
    mul.wide.u32 %rd3, %r1, 4;
    add.u64 %rd2, %rd2, %rd3;
    st.global.u32 [%rd2], 1;
    ret;
}
"#;

#[test]
fn a_wait_whose_arrivals_come_later_in_program_order_completes() {
    let Some(device) = common::device() else { return };
    let module = Module::from_ptx(&device, LATER).expect("the module loads");
    let out = device.zeroed::<u32>(64).expect("out");
    module
        .kernel("later")
        .expect("kernel")
        .launch([1, 1, 1], [64, 1, 1], 0, &[Arg::from(&out)])
        .expect("the wait completes once warp 0 arrives");
    assert_eq!(out.to_vec().expect("read"), vec![1u32; 64]);
}

#[test]
fn a_wait_that_nothing_completes_ends_with_an_error_naming_its_line() {
    let Some(device) = common::device() else { return };
    // Warp 0 never arrives: warp 1's wait can only spin.
    let never = LATER.replace("    @%p2 mbarrier.arrive.shared.b64 %rd1, [bar];\n", "");
    assert_ne!(never, LATER);
    // The loop is named by its first line, its label.
    let line = never.lines().position(|l| l == "WAIT:").expect("the loop") + 1;
    let module = Module::from_ptx(&device, &never).expect("the module loads");
    let out = device.zeroed::<u32>(64).expect("out");
    let error = module
        .kernel("later")
        .expect("kernel")
        .launch([1, 1, 1], [64, 1, 1], 0, &[Arg::from(&out)])
        .expect_err("the wait cannot complete");
    let message = error.to_string();
    assert!(message.contains("spins") && message.contains(&format!(":{line}")), "{message}");
}

#[test]
fn an_mbarrier_for_more_arrivals_than_the_layout_counts_is_refused_at_run_time() {
    let Some(device) = common::device() else { return };
    let text = LATER.replace("[bar], 32;", "[bar], 5000;");
    let module = Module::from_ptx(&device, &text).expect("the module loads");
    let out = device.zeroed::<u32>(64).expect("out");
    let error = module
        .kernel("later")
        .expect("kernel")
        .launch([1, 1, 1], [64, 1, 1], 0, &[Arg::from(&out)])
        .expect_err("5000 arrivals do not fit");
    let message = error.to_string();
    assert!(message.contains("5000 arrivals") && message.contains("2047"), "{message}");
}

#[test]
fn every_warp_mode_validates_the_mbarrier_kernels() {
    for (_, path) in variants() {
        common::compile_every_warp_mode(&path);
    }
}

/// The clocks libcu++'s waits back off on: `%globaltimer` and `%clock64` read the
/// device clock, which never goes back; `%clock` and `%globaltimer_lo` are its low
/// halves. The module says it needs `shaderDeviceClock`.
const CLOCKS: &str = r#"
.version 8.0
.target sm_80
.address_size 64

.visible .entry clocks(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    .reg .pred %p<4>;

    ld.param.u64 %rd1, [out];
    mov.u64 %rd2, %globaltimer;
    mov.u64 %rd3, %clock64;
    mov.u32 %r1, %clock;
    mov.u32 %r2, %globaltimer_hi;
    mov.u64 %rd4, %globaltimer;
    setp.ge.u64 %p1, %rd4, %rd2;
    selp.u32 %r3, 1, 0, %p1;
    setp.ge.u64 %p2, %rd4, %rd3;
    selp.u32 %r4, 1, 0, %p2;
    cvt.u32.u64 %r5, %rd2;
    shr.u64 %rd5, %rd4, 32;
    cvt.u32.u64 %r6, %rd5;
    setp.ge.u32 %p3, %r6, %r2;
    selp.u32 %r7, 1, 0, %p3;
    st.global.v4.u32 [%rd1], {%r3, %r4, %r7, %r1};
    st.global.u64 [%rd1+16], %rd4;
    ret;
}
"#;

#[test]
fn clocks_read_the_device_clock_which_only_increases() {
    let compiled = ptxvk::compile::compile_with("clocks.ptx", CLOCKS, None, Default::default())
        .expect("compiles");
    assert!(compiled.spirv.requirements.device_clock, "the module needs shaderDeviceClock");
    let Some(device) = common::device() else { return };
    let module = Module::from_ptx(&device, CLOCKS).expect("the module loads");
    let out = device.zeroed::<u32>(6).expect("out");
    module
        .kernel("clocks")
        .expect("kernel")
        .launch([1, 1, 1], [1, 1, 1], 0, &[Arg::from(&out)])
        .expect("clocks");
    let got = out.to_vec().expect("read");
    assert_eq!(&got[..3], &[1, 1, 1], "later reads are not smaller");
    assert_ne!(u64::from(got[4]) | (u64::from(got[5]) << 32), 0, "the clock runs");
}
