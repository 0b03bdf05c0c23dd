//! The cost of ptxvk's texture fetches, which the kernel performs itself (descriptor
//! read, address modes, texel loads, channel conversion and 1.8 fixed-point filtering:
//! `lower/src/pass/expand_texture.rs`) instead of a sampler unit: one fetch per thread
//! over a 1024 x 1024 float4 texture (`benches/ptx/texture_fetch.ptx`), against a plain
//! 16-byte global load of the same texels, and for an RGBA8 texture read as normalized
//! floats.
//! Every result is checked against the texels (point sampling at texel centres) or the
//! filter's exact value (linear at x + 0.75: weights 3/4 and 1/4).
//!
//! ```text
//! cargo bench --bench texture
//! ```

mod common;

use ptxvk::{
    AddressMode, Arg, ChannelKind, Device, DeviceBuffer, Module, TextureDesc, TextureObject,
};

const W: usize = 1024;
const H: usize = 1024;

fn main() {
    let device = Device::default_device().expect("a Vulkan device");
    println!("device: {}", device.info().name);
    let ptx = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/benches/ptx/texture_fetch.ptx"
    ))
    .expect("benches/ptx/texture_fetch.ptx");
    let module = Module::from_ptx(&device, &ptx).expect("compile");
    let texels: Vec<f32> = (0..W * H * 4).map(|k| ((k * 37) % 1000) as f32 / 8.0).collect();
    let input = device.buffer_from(&texels).expect("texels");
    let out = device.zeroed::<f32>(W * H * 4).expect("out");
    let (w, h) = (W as u32, H as u32);
    let grid = [w / 16, h / 16, 1];
    let block = [16, 16, 1];
    let gtexels = (W * H) as f64 / 1e9;
    let report = |name: &str, ms: f64| {
        println!("  {name:<34} {ms:8.2} ms  {:7.3} Gtexel/s", gtexels / (ms / 1e3));
    };

    let copy = module.kernel("copy_global").expect("copy_global");
    let args = [Arg::from(&input), Arg::from(&out), Arg::from(w), Arg::from(h)];
    let ms =
        common::median_ms(|| copy.launch_timed(grid, block, 0, &args).expect("copy").kernel_ms);
    assert_eq!(out.to_vec().expect("out"), texels, "copy_global");
    report("global load (baseline)", ms);

    let fetch = module.kernel("fetch").expect("fetch");
    let float4 = TextureDesc {
        address: input.address(),
        width: w,
        height: h,
        depth: 1,
        row_pitch: 16 * W as u64,
        slice_pitch: 16 * (W * H) as u64,
        kind: ChannelKind::Float,
        channel_bytes: 4,
        channels: 4,
        address_modes: [AddressMode::Clamp; 3],
        ..TextureDesc::default()
    };
    let texel = |x: usize, y: usize, c: usize| texels[4 * (y * W + x) + c];
    for (name, linear, dx) in [("float4 point", false, 0.5f32), ("float4 linear", true, 0.75)] {
        let tex = device
            .texture_object(&TextureDesc { linear_filter: linear, ..float4.clone() })
            .expect("texture");
        let args = fetch_args(&tex, &out, dx);
        let ms =
            common::median_ms(|| fetch.launch_timed(grid, block, 0, &args).expect(name).kernel_ms);
        let got = out.to_vec().expect("out");
        for y in 0..H {
            for x in 0..W {
                for c in 0..4 {
                    // Linear at x + 0.75: 3/4 of texel x, 1/4 of x + 1 (clamped).
                    let want = if linear {
                        0.75 * texel(x, y, c) + 0.25 * texel((x + 1).min(W - 1), y, c)
                    } else {
                        texel(x, y, c)
                    };
                    assert_eq!(got[4 * (y * W + x) + c], want, "{name} ({x}, {y}).{c}");
                }
            }
        }
        report(name, ms);
    }

    // RGBA8 read as normalized floats: the channel conversion on top of the fetch.
    let bytes: Vec<u8> = (0..W * H * 4).map(|k| (k * 7 % 256) as u8).collect();
    let rgba8 = device.buffer_from(&bytes).expect("rgba8");
    let tex = device
        .texture_object(&TextureDesc {
            address: rgba8.address(),
            row_pitch: 4 * W as u64,
            slice_pitch: 4 * (W * H) as u64,
            kind: ChannelKind::Unsigned,
            channel_bytes: 1,
            read_normalized: true,
            ..float4.clone()
        })
        .expect("texture");
    let args = fetch_args(&tex, &out, 0.5);
    let ms =
        common::median_ms(|| fetch.launch_timed(grid, block, 0, &args).expect("rgba8").kernel_ms);
    let got = out.to_vec().expect("out");
    for (k, (&g, &b)) in got.iter().zip(&bytes).enumerate() {
        assert_eq!(g, f32::from(b) / 255.0, "rgba8 normalized [{k}]");
    }
    report("rgba8 point, normalized floats", ms);
}

/// `fetch`'s arguments: texel (x, y) of `tex` is read at (x + dx, y + 0.5) into `out`.
fn fetch_args<'a>(tex: &'a TextureObject, out: &'a DeviceBuffer<f32>, dx: f32) -> [Arg<'a>; 6] {
    let (w, h) = (W as u32, H as u32);
    [Arg::from(tex), Arg::from(out), Arg::from(w), Arg::from(h), Arg::from(dx), Arg::from(0.5f32)]
}
