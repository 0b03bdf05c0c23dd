//! The cost of a grid barrier (`this_grid().sync()`, issue #39): a kernel that adds 1 to
//! each thread's element `n` times, with a grid barrier after each add (`sync`), against
//! the same kernel without barriers (`plain`). ptxvk cuts the kernel into phases at its
//! grid barriers (`ptxvk_lower::pass::split_grid`); a barrier inside the loop makes the
//! launch dispatch phases until no thread is suspended. Figures are the medians of
//! `RUNS` synchronous launches (`Kernel::launch`, host-measured) after a warm-up, for
//! grids of G blocks of 128 threads.
//!
//! ```text
//! cargo bench --bench grid_sync [-- BARRIERS]
//! ```

mod common;

use std::time::Instant;

use common::median_ms;
use ptxvk::{Arg, Device, Module};

const PTX: &str = r#"
.version 8.0
.target sm_80
.address_size 64
.extern .func (.param .b64 handle) cudaCGGetIntrinsicHandle(.param .b32 scope);
.extern .func (.param .b32 status) cudaCGSynchronize(.param .b64 handle, .param .b32 flags);

.visible .entry KERNEL(.param .u64 a, .param .u32 n)
{
	.reg .pred %p<2>;
	.reg .b32 %r<12>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [a];
	ld.param.u32 %r9, [n];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r3, %tid.x;
	mov.u32 %r4, %ntid.x;
	mad.lo.s32 %r5, %r1, %r4, %r3;
	mul.wide.u32 %rd3, %r5, 4;
	add.s64 %rd4, %rd1, %rd3;
	{
	.param .b32 s;
	.param .b64 h;
	st.param.b32 [s], 4;
	call.uni (h), cudaCGGetIntrinsicHandle, (s);
	ld.param.b64 %rd5, [h];
	}
	mov.u32 %r10, 0;
$LOOP:
	ld.global.u32 %r6, [%rd4];
	add.s32 %r6, %r6, 1;
	st.global.u32 [%rd4], %r6;
	SYNC
	add.s32 %r10, %r10, 1;
	setp.lt.u32 %p1, %r10, %r9;
	@%p1 bra $LOOP;
	ret;
}
"#;

const SYNC: &str = "{
	.param .b64 h;
	.param .b32 f;
	.param .b32 st;
	st.param.b64 [h], %rd5;
	st.param.b32 [f], 0;
	call.uni (st), cudaCGSynchronize, (h, f);
	}";

fn main() {
    let barriers: u32 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(16);
    let device = Device::default_device().expect("a Vulkan device");
    println!("device: {}", device.info().name);
    let sync = PTX.replace("KERNEL", "sync").replace("SYNC", SYNC);
    let plain = PTX.replace("KERNEL", "plain").replace("SYNC", "");
    let (sync, plain) = (
        Module::from_ptx(&device, &sync).expect("compile sync"),
        Module::from_ptx(&device, &plain).expect("compile plain"),
    );
    println!("{barriers} rounds; ms per launch; µs per grid barrier");
    println!("| blocks | without barriers | with barriers | per barrier |");
    println!("|---|---|---|---|");
    for blocks in [1u32, 16, 256, 1024] {
        let n = (blocks * 128) as usize;
        let a = device.zeroed::<u32>(n).expect("a");
        let args = [Arg::from(&a), Arg::value(barriers)];
        let time = |m: &Module, name: &str| {
            let k = m.kernel(name).expect("kernel");
            k.launch(blocks, 128, 0, &args).expect("warm-up");
            median_ms(|| {
                let t = Instant::now();
                k.launch(blocks, 128, 0, &args).expect("launch");
                t.elapsed().as_secs_f64() * 1e3
            })
        };
        let (p, s) = (time(&plain, "plain"), time(&sync, "sync"));
        let per = (s - p) * 1e3 / f64::from(barriers);
        println!("| {blocks} | {p:.2} | {s:.2} | {per:.0} |");
    }
}
