//! Textures and surfaces end to end (issue #20): `tests/kernels/texture.cu`, built by
//! nvcc, NVRTC and clang, reads texture objects of every geometry ptxvk implements
//! (1-D, 2-D, 3-D, layered 2-D, linear memory), formats (f32, f16, u8 read as normalized
//! floats, s8 and s32 integers) and sampler states (point and linear filtering, wrap,
//! clamp, mirror and border addressing, normalized and unnormalized coordinates), and
//! surfaces with their out-of-range modes; every value is checked bit for bit against a
//! CPU model of NVIDIA's texture fetching written from the CUDA Programming Guide's
//! appendix (linear filtering with weights in 9-bit fixed point, 8 fraction bits).

mod common;

use ptxvk::{AddressMode, Arg, ChannelKind, Device, Module, SamplerDesc, TextureDesc};

fn variants() -> Vec<std::path::PathBuf> {
    let names = [
        "nvcc.sm_75",
        "nvcc.sm_80",
        "nvcc.sm_90",
        "nvrtc.compute_52",
        "nvrtc.compute_70",
        "clang.sm_70",
    ];
    names.iter().map(|n| common::repo().join(format!("tests/kernels/texture.{n}.ptx"))).collect()
}

/// A texture as the model sees it: texels already converted to the fetch's result (f32
/// values, or integer bits), and the sampler state.
struct Model {
    sizes: [usize; 3],
    layers: usize,
    channels: usize,
    texels: Vec<[u32; 4]>,
    float: bool,
    normalized: bool,
    linear: bool,
    modes: [AddressMode; 3],
    border: [f32; 4],
}

impl Model {
    /// Coordinate `x` of dimension `k` in texels (normalized: wrapped or mirrored first).
    fn coordinate(&self, k: usize, x: f32) -> f32 {
        if !self.normalized {
            return x;
        }
        let floor = x.floor();
        let frac = x - floor;
        let x1 = match self.modes[k] {
            AddressMode::Wrap => frac,
            AddressMode::Mirror => {
                let odd = (floor * 0.5) != (floor * 0.5).floor();
                if odd {
                    1.0 - frac
                } else {
                    frac
                }
            }
            _ => x,
        };
        x1 * self.sizes[k] as f32
    }

    /// The texel index `i` of dimension `k` reads, or `None` for the border colour.
    fn index(&self, k: usize, i: i64) -> Option<usize> {
        let n = self.sizes[k] as i64;
        match self.modes[k] {
            AddressMode::Border if !(0..n).contains(&i) => None,
            AddressMode::Wrap if self.normalized => Some(i.rem_euclid(n) as usize),
            _ => Some(i.clamp(0, n - 1) as usize),
        }
    }

    fn texel(&self, idx: &[Option<usize>], layer: usize) -> [u32; 4] {
        if idx.iter().any(Option::is_none) {
            return if self.float { self.border.map(f32::to_bits) } else { [0; 4] };
        }
        let i = |k: usize| idx.get(k).copied().flatten().unwrap_or(0);
        let slice = if self.layers > 0 { layer } else { i(2) };
        let at = (slice * self.sizes[1] + i(1)) * self.sizes[0] + i(0);
        let mut t = self.texels[at];
        let one = if self.float { 1f32.to_bits() } else { 1 };
        for (c, v) in t.iter_mut().enumerate().skip(self.channels) {
            *v = if c == 3 { one } else { 0 };
        }
        t
    }

    /// The fetch at float coordinates `xs` of layer `layer` (clamped to the layers).
    fn sample(&self, xs: &[f32], layer: i32) -> [u32; 4] {
        self.sample_offset(xs, &[], layer)
    }

    /// The fetch at float coordinates `xs` with texel offsets (added to the coordinates
    /// in texels, PTX ISA 9.2 §9.7.10.3).
    fn sample_offset(&self, xs: &[f32], offsets: &[i32], layer: i32) -> [u32; 4] {
        let layer = layer.clamp(0, self.layers.max(1) as i32 - 1) as usize;
        let coords: Vec<f32> = xs
            .iter()
            .enumerate()
            .map(|(k, &x)| self.coordinate(k, x) + offsets.get(k).map_or(0.0, |&o| o as f32))
            .collect();
        if !self.linear {
            let idx: Vec<Option<usize>> =
                coords.iter().enumerate().map(|(k, c)| self.index(k, c.floor() as i64)).collect();
            return self.texel(&idx, layer);
        }
        let mut lower = Vec::new();
        let mut weight = Vec::new();
        for &c in &coords {
            let b = c - 0.5;
            let floor = b.floor();
            // 9-bit fixed point, 8 fraction bits, to the nearest (ties to even).
            let a = ((b - floor) * 256.0).round_ties_even() * (1.0 / 256.0);
            lower.push(floor as i64);
            weight.push(a);
        }
        let mut sum: Option<[f32; 4]> = None;
        for corner in 0..1usize << coords.len() {
            let mut w = 1.0f32;
            let mut idx = Vec::new();
            for k in 0..coords.len() {
                let up = corner >> k & 1 == 1;
                w *= if up { weight[k] } else { 1.0 - weight[k] };
                idx.push(self.index(k, lower[k] + i64::from(up)));
            }
            let t = self.texel(&idx, layer).map(f32::from_bits);
            let term = t.map(|v| w * v);
            sum = Some(match sum {
                None => term,
                Some(s) => [s[0] + term[0], s[1] + term[1], s[2] + term[2], s[3] + term[3]],
            });
        }
        sum.unwrap_or([0.0; 4]).map(f32::to_bits)
    }
}

/// The face of a cube map direction `(x, y, z)` points at and the normalized coordinates
/// in it (CUDA Programming Guide, "Cubemap Textures"; ties go to x, then y).
fn cube_face(x: f32, y: f32, z: f32) -> ((f32, f32), i32) {
    let (ax, ay, az) = (x.abs(), y.abs(), z.abs());
    let (face, sc, tc, m) = if ax >= ay && ax >= az {
        if x >= 0.0 {
            (0, -z, -y, ax)
        } else {
            (1, z, -y, ax)
        }
    } else if ay >= az {
        if y >= 0.0 {
            (2, x, z, ay)
        } else {
            (3, x, -z, ay)
        }
    } else if z >= 0.0 {
        (4, x, -y, az)
    } else {
        (5, -x, -y, az)
    };
    (((sc / m + 1.0) * 0.5, (tc / m + 1.0) * 0.5), face)
}

/// A texture of `channels` f32 channels of random values in [-8, 8), uploaded.
struct Texels {
    buffer: ptxvk::DeviceBuffer<u8>,
    desc: TextureDesc,
    model: Model,
}

#[allow(clippy::too_many_arguments)]
fn upload(
    device: &Device,
    kind: ChannelKind,
    channel_bytes: u32,
    channels: usize,
    sizes: [usize; 3],
    layers: usize,
    raw: &[u32],
    read_normalized: bool,
) -> Texels {
    let count = sizes[0] * sizes[1] * sizes[2].max(layers);
    let bytes: Vec<u8> =
        raw.iter().flat_map(|v| v.to_le_bytes()[..channel_bytes as usize].to_vec()).collect();
    assert_eq!(bytes.len(), count * channels * channel_bytes as usize);
    let buffer = device.buffer_from(&bytes).expect("texels");
    let texel_bytes = u64::from(channel_bytes) * channels as u64;
    let row_pitch = texel_bytes * sizes[0] as u64;
    let desc = TextureDesc {
        address: buffer.address(),
        width: sizes[0] as u32,
        height: sizes[1] as u32,
        depth: sizes[2] as u32,
        layers: layers as u32,
        row_pitch,
        slice_pitch: row_pitch * sizes[1] as u64,
        kind,
        channel_bytes,
        channels: channels as u32,
        read_normalized,
        ..TextureDesc::default()
    };
    // The model's texels: the conversion `pass::expand_texture` documents.
    let float = kind == ChannelKind::Float || read_normalized;
    let convert = |v: u32| -> u32 {
        let bits = 8 * channel_bytes;
        let signed = |v: u32| ((v << (32 - bits)) as i32) >> (32 - bits);
        match kind {
            ChannelKind::Float if channel_bytes == 2 => {
                half::f16::from_bits(v as u16).to_f32().to_bits()
            }
            ChannelKind::Float => v,
            ChannelKind::Unsigned if read_normalized => {
                (v as f32 / ((1u64 << bits) - 1) as f32).to_bits()
            }
            ChannelKind::Signed if read_normalized => {
                (signed(v) as f32 / ((1u64 << (bits - 1)) - 1) as f32).max(-1.0).to_bits()
            }
            ChannelKind::Signed if bits < 32 => signed(v) as u32,
            _ => v,
        }
    };
    let texels = raw
        .chunks(channels)
        .map(|c| {
            let mut t = [0u32; 4];
            for (k, &v) in c.iter().enumerate() {
                t[k] = convert(v);
            }
            t
        })
        .collect();
    let model = Model {
        sizes,
        layers,
        channels,
        texels,
        float,
        normalized: false,
        linear: false,
        modes: [AddressMode::Clamp; 3],
        border: [0.0; 4],
    };
    Texels { buffer, desc, model }
}

/// Random f32 texel values (multiples of 1/64 in [-8, 8)).
fn float_values(rng: &mut common::Rng, n: usize) -> Vec<u32> {
    (0..n).map(|_| ((rng.below(1024) as f32 - 512.0) / 64.0).to_bits()).collect()
}

/// Coordinates: random in [lo, hi), plus texel centres and edges of dimension size `n`
/// (unnormalized) or their normalized equivalents.
fn coordinates(rng: &mut common::Rng, count: usize, lo: f32, hi: f32) -> Vec<f32> {
    (0..count)
        .map(|i| match i % 4 {
            // Quarter-texel steps hit exact weights, ties included.
            0 => lo + (rng.below(((hi - lo) * 8.0) as u64) as f32) / 8.0,
            _ => lo + (hi - lo) * (rng.next_u32() as f32 / 4_294_967_296.0),
        })
        .collect()
}

/// Every sampler state to try: filter, normalized coordinates and the address mode of
/// every dimension.
fn sampler_states() -> Vec<(bool, bool, AddressMode)> {
    let mut out = Vec::new();
    for linear in [false, true] {
        for mode in [AddressMode::Clamp, AddressMode::Border] {
            out.push((linear, false, mode));
        }
        for mode in
            [AddressMode::Wrap, AddressMode::Clamp, AddressMode::Mirror, AddressMode::Border]
        {
            out.push((linear, true, mode));
        }
    }
    out
}

fn set_state(t: &mut Texels, linear: bool, normalized: bool, mode: AddressMode, border: [f32; 4]) {
    t.desc.linear_filter = linear;
    t.desc.normalized_coords = normalized;
    t.desc.address_modes = [mode; 3];
    t.desc.border = border;
    t.model.linear = linear;
    t.model.normalized = normalized;
    t.model.modes = [mode; 3];
    t.model.border = border;
}

/// Runs `kernel` over `n` coordinates per dimension (`xs` for each) and returns its
/// output of `words` u32 per element.
fn launch(
    module: &Module,
    device: &Device,
    kernel: &str,
    handle: &ptxvk::TextureObject,
    inputs: &[Vec<u32>],
    words: usize,
    n: usize,
) -> Vec<u32> {
    let buffers: Vec<ptxvk::DeviceBuffer<u32>> =
        inputs.iter().map(|v| device.buffer_from(v).expect("input")).collect();
    let out = device.zeroed::<u32>(n * words).expect("out");
    let mut args = vec![Arg::from(handle)];
    args.extend(buffers.iter().map(Arg::from));
    args.push(Arg::from(&out));
    args.push(Arg::from(n as i32));
    module
        .kernel(kernel)
        .expect("kernel")
        .launch([n.div_ceil(64) as u32, 1, 1], [64, 1, 1], 0, &args)
        .unwrap_or_else(|e| panic!("{kernel}: {e}"));
    out.to_vec().expect("read")
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Every texture and surface kernel of one build of `textures.cu`, against the models.
fn run_variant(device: &Device, path: &std::path::Path, every_state: bool) {
    let module = common::load(device, path);
    let name = path.display().to_string();
    let rng = &mut common::Rng(0x7e57);
    let v =
        Variant { device, module: &module, name: &name, n: 256, border: [0.25, -1.5, 3.0, 0.75] };
    sampled_2d_f32(&v, rng, every_state);
    float4_uchar4_and_srgb(&v, rng);
    gather_tld4(&v, rng);
    mipmaps(&v, rng);
    cube_map(&v, rng);
    one_d_three_d_and_layered(&v, rng);
    fetches_and_integers(&v, rng);
    surfaces(&v, rng);
}

/// What every part of [`run_variant`] works with.
struct Variant<'a> {
    device: &'a Device,
    module: &'a Module,
    name: &'a str,
    n: usize,
    border: [f32; 4],
}

/// 2-D f32, one channel: every sampler state (or two).
fn sampled_2d_f32(v: &Variant<'_>, rng: &mut common::Rng, every_state: bool) {
    let Variant { device, module, name, n, border } = *v;
    // 2-D f32, one channel: every sampler state.
    let (w, h) = (13, 7);
    let mut t =
        upload(device, ChannelKind::Float, 4, 1, [w, h, 1], 0, &float_values(rng, w * h), false);
    let states = if every_state {
        sampler_states()
    } else {
        vec![(true, true, AddressMode::Wrap), (true, false, AddressMode::Border)]
    };
    for (linear, normalized, mode) in states {
        set_state(&mut t, linear, normalized, mode, border);
        let obj = device.texture_object(&t.desc).expect("texture");
        let (xs, ys) = if normalized {
            (coordinates(rng, n, -1.5, 2.5), coordinates(rng, n, -1.5, 2.5))
        } else {
            (coordinates(rng, n, -3.0, w as f32 + 3.0), coordinates(rng, n, -3.0, h as f32 + 3.0))
        };
        let got = launch(module, device, "tex2d_float", &obj, &[bits(&xs), bits(&ys)], 1, n);
        for i in 0..n {
            let want = t.model.sample(&[xs[i], ys[i]], 0)[0];
            assert_eq!(got[i], want, "{name} tex2d_float linear {linear} normalized {normalized} {mode:?} at ({}, {}): {} want {}", xs[i], ys[i], f32::from_bits(got[i]), f32::from_bits(want));
        }
    }
}

/// 2-D float4 and uchar4 read as normalized floats, and the same bytes as sRGB.
fn float4_uchar4_and_srgb(v: &Variant<'_>, rng: &mut common::Rng) {
    let Variant { device, module, name, n, border } = *v;
    // 2-D float4 (linear, normalized, wrap) and uchar4 read as normalized floats (linear,
    // clamp, unnormalized).
    let mut t = upload(
        device,
        ChannelKind::Float,
        4,
        4,
        [5, 6, 1],
        0,
        &float_values(rng, 5 * 6 * 4),
        false,
    );
    set_state(&mut t, true, true, AddressMode::Wrap, border);
    let mut u = upload(
        device,
        ChannelKind::Unsigned,
        1,
        4,
        [9, 4, 1],
        0,
        &(0..9 * 4 * 4).map(|_| rng.below(256) as u32).collect::<Vec<_>>(),
        true,
    );
    set_state(&mut u, true, false, AddressMode::Clamp, border);
    // The same bytes as sRGB: R, G, B decoded (IEC 61966-2-1) before filtering.
    let codes: Vec<u32> = u
        .model
        .texels
        .iter()
        .flat_map(|t| t.map(|v| (f32::from_bits(v) * 255.0).round() as u32))
        .collect();
    let mut srgb = upload(device, ChannelKind::Unsigned, 1, 4, [9, 4, 1], 0, &codes, true);
    set_state(&mut srgb, true, false, AddressMode::Clamp, border);
    srgb.desc.srgb = true;
    for t in srgb.model.texels.iter_mut() {
        for v in t.iter_mut().take(3) {
            let code = (f32::from_bits(*v) * 255.0).round() as u32;
            let c = f64::from(code) / 255.0;
            let linear = if c <= 0.04045 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) };
            *v = (linear as f32).to_bits();
        }
    }
    for (t, lo, hi) in [(&t, -2.0, 3.0), (&u, -2.0, 11.0), (&srgb, -2.0, 11.0)] {
        let obj = device.texture_object(&t.desc).expect("texture");
        let (xs, ys) = (coordinates(rng, n, lo, hi), coordinates(rng, n, lo, hi));
        let got = launch(module, device, "tex2d_float4", &obj, &[bits(&xs), bits(&ys)], 4, n);
        for i in 0..n {
            let want = t.model.sample(&[xs[i], ys[i]], 0);
            assert_eq!(
                &got[4 * i..4 * i + 4],
                &want,
                "{name} tex2d_float4 at ({}, {})",
                xs[i],
                ys[i]
            );
        }
    }
}

/// `tld4.g`: the second channel of the four texels of the bilinear footprint.
fn gather_tld4(v: &Variant<'_>, rng: &mut common::Rng) {
    let Variant { device, module, name, n, border } = *v;
    // tld4.g: the second channel of the four texels of the bilinear footprint, in the
    // order (i, j+1), (i+1, j+1), (i+1, j), (i, j); float4 texels, border, unnormalized.
    let mut g = upload(
        device,
        ChannelKind::Float,
        4,
        4,
        [6, 5, 1],
        0,
        &float_values(rng, 6 * 5 * 4),
        false,
    );
    set_state(&mut g, false, false, AddressMode::Border, border);
    let obj = device.texture_object(&g.desc).expect("texture");
    let (xs, ys) = (coordinates(rng, n, -2.0, 8.0), coordinates(rng, n, -2.0, 7.0));
    let got = launch(module, device, "tex2d_gather", &obj, &[bits(&xs), bits(&ys)], 4, n);
    for i in 0..n {
        let (x0, y0) = ((xs[i] - 0.5).floor() as i64, (ys[i] - 0.5).floor() as i64);
        let want: Vec<u32> = [(0, 1), (1, 1), (1, 0), (0, 0)]
            .iter()
            .map(|&(dx, dy)| {
                let idx = [g.model.index(0, x0 + dx), g.model.index(1, y0 + dy)];
                g.model.texel(&idx, 0)[1]
            })
            .collect();
        assert_eq!(
            &got[4 * i..4 * i + 4],
            want.as_slice(),
            "{name} tex2d_gather at ({}, {})",
            xs[i],
            ys[i]
        );
    }
}

/// A mipmapped texture: nearest and linear mipmap filtering, a bias and a level clamp.
fn mipmaps(v: &Variant<'_>, rng: &mut common::Rng) {
    let Variant { device, module, name, n, border } = *v;
    // A mipmapped 8 x 4 f32 texture of 3 levels (8 x 4, 4 x 2, 2 x 1), linear, clamp,
    // normalized; nearest and linear mipmap filtering, a bias and a level clamp.
    let sizes = [(8usize, 4usize), (4, 2), (2, 1)];
    let level_values: Vec<Vec<u32>> =
        sizes.iter().map(|&(w, h)| float_values(rng, w * h)).collect();
    let all: Vec<u32> = level_values.concat();
    let mut mip = upload(device, ChannelKind::Float, 4, 1, [all.len(), 1, 1], 0, &all, false);
    let levels: Vec<Model> = sizes
        .iter()
        .zip(&level_values)
        .map(|(&(w, h), v)| Model {
            sizes: [w, h, 1],
            layers: 0,
            channels: 1,
            texels: v.iter().map(|&x| [x, 0, 0, 0]).collect(),
            float: true,
            normalized: true,
            linear: true,
            modes: [AddressMode::Clamp; 3],
            border,
        })
        .collect();
    mip.desc.width = 8;
    mip.desc.height = 4;
    mip.desc.row_pitch = 32;
    mip.desc.slice_pitch = 128;
    mip.desc.levels = 3;
    mip.desc.linear_filter = true;
    mip.desc.normalized_coords = true;
    for (mip_linear, bias, max) in [(false, 0.0f32, 2.0f32), (true, 0.25, 2.0), (true, 0.0, 1.5)] {
        mip.desc.mip_linear = mip_linear;
        mip.desc.level_bias = bias;
        mip.desc.max_level = max;
        let obj = device.texture_object(&mip.desc).expect("texture");
        let (xs, ys) = (coordinates(rng, n, -0.25, 1.25), coordinates(rng, n, -0.25, 1.25));
        let lods = coordinates(rng, n, -1.0, 3.5);
        let got =
            launch(module, device, "tex2d_lod", &obj, &[bits(&xs), bits(&ys), bits(&lods)], 1, n);
        for i in 0..n {
            let l = (lods[i] + bias).max(0.0).min(max).clamp(0.0, 2.0);
            let at = |k: usize| levels[k].sample(&[xs[i], ys[i]], 0)[0];
            let want = if mip_linear {
                let below = l.floor();
                let w = ((l - below) * 256.0).round_ties_even() * (1.0 / 256.0);
                let k = below as usize;
                let a = f32::from_bits(at(k));
                let b = f32::from_bits(at((k + 1).min(2)));
                ((1.0 - w) * a + w * b).to_bits()
            } else {
                at((l + 0.5).floor() as usize)
            };
            assert_eq!(
                got[i], want,
                "{name} tex2d_lod mip linear {mip_linear} bias {bias} max {max} lod {} at ({}, {})",
                lods[i], xs[i], ys[i]
            );
        }
    }
}

/// A cube map: directions of every face, ties between axes included.
fn cube_map(v: &Variant<'_>, rng: &mut common::Rng) {
    let Variant { device, module, name, n, border } = *v;
    // A cube map of 4 x 4 faces (six layers), linear, clamp: directions of every face,
    // ties between axes included.
    let mut c = upload(
        device,
        ChannelKind::Float,
        4,
        1,
        [4, 4, 1],
        6,
        &float_values(rng, 4 * 4 * 6),
        false,
    );
    set_state(&mut c, true, true, AddressMode::Clamp, border);
    let obj = device.texture_object(&c.desc).expect("texture");
    let dirs: Vec<Vec<f32>> = (0..3)
        .map(|_| {
            (0..n)
                .map(|k| if k % 7 == 0 { 1.0 } else { (rng.below(17) as f32 - 8.0) / 4.0 })
                .collect()
        })
        .collect();
    let got = launch(
        module,
        device,
        "texcube_float",
        &obj,
        &[bits(&dirs[0]), bits(&dirs[1]), bits(&dirs[2])],
        1,
        n,
    );
    for i in 0..n {
        let (x, y, z) = (dirs[0][i], dirs[1][i], dirs[2][i]);
        if x == 0.0 && y == 0.0 && z == 0.0 {
            continue;
        }
        let ((s, t), face) = cube_face(x, y, z);
        let want = c.model.sample(&[s, t], face)[0];
        assert_eq!(got[i], want, "{name} texcube_float ({x}, {y}, {z}) face {face}");
    }
}

/// 1-D halves, 3-D f32 and layered 2-D f32.
fn one_d_three_d_and_layered(v: &Variant<'_>, rng: &mut common::Rng) {
    let Variant { device, module, name, n, border } = *v;
    // 1-D halves: linear, border, unnormalized.
    let halves: Vec<u32> =
        (0..17).map(|i| u32::from(half::f16::from_f32(i as f32 * 0.375 - 3.0).to_bits())).collect();
    let mut t = upload(device, ChannelKind::Float, 2, 1, [17, 1, 1], 0, &halves, false);
    set_state(&mut t, true, false, AddressMode::Border, border);
    let obj = device.texture_object(&t.desc).expect("texture");
    let xs = coordinates(rng, n, -2.0, 19.0);
    let got = launch(module, device, "tex1d_float", &obj, &[bits(&xs)], 1, n);
    for i in 0..n {
        assert_eq!(got[i], t.model.sample(&[xs[i]], 0)[0], "{name} tex1d_float f16 at {}", xs[i]);
    }

    // 3-D f32: linear, normalized; wrap and clamp.
    let (x, y, z) = (5, 4, 3);
    let mut t = upload(
        device,
        ChannelKind::Float,
        4,
        1,
        [x, y, z],
        0,
        &float_values(rng, x * y * z),
        false,
    );
    for mode in [AddressMode::Wrap, AddressMode::Clamp] {
        set_state(&mut t, true, true, mode, border);
        let obj = device.texture_object(&t.desc).expect("texture");
        let c: Vec<Vec<f32>> = (0..3).map(|_| coordinates(rng, n, -0.5, 1.5)).collect();
        let got = launch(
            module,
            device,
            "tex3d_float",
            &obj,
            &[bits(&c[0]), bits(&c[1]), bits(&c[2])],
            1,
            n,
        );
        for i in 0..n {
            let want = t.model.sample(&[c[0][i], c[1][i], c[2][i]], 0)[0];
            assert_eq!(
                got[i], want,
                "{name} tex3d_float {mode:?} at ({}, {}, {})",
                c[0][i], c[1][i], c[2][i]
            );
        }
    }

    // Layered 2-D f32: linear, border, unnormalized; layers -1..=3 of 3 (clamped).
    let mut t = upload(
        device,
        ChannelKind::Float,
        4,
        1,
        [6, 5, 1],
        3,
        &float_values(rng, 6 * 5 * 3),
        false,
    );
    set_state(&mut t, true, false, AddressMode::Border, border);
    let obj = device.texture_object(&t.desc).expect("texture");
    let (xs, ys) = (coordinates(rng, n, -2.0, 8.0), coordinates(rng, n, -2.0, 7.0));
    let layers: Vec<u32> = (0..n).map(|_| (rng.below(5) as i32 - 1) as u32).collect();
    let got = launch(
        module,
        device,
        "tex2d_layered_float",
        &obj,
        &[bits(&xs), bits(&ys), layers.clone()],
        1,
        n,
    );
    for i in 0..n {
        let want = t.model.sample(&[xs[i], ys[i]], layers[i] as i32)[0];
        assert_eq!(
            got[i], want,
            "{name} tex2d_layered_float layer {} at ({}, {})",
            layers[i] as i32, xs[i], ys[i]
        );
    }
}

/// `tex1Dfetch` over linear memory, and integer texels.
fn fetches_and_integers(v: &Variant<'_>, rng: &mut common::Rng) {
    let Variant { device, module, name, n, .. } = *v;
    // tex1Dfetch over linear memory: s32, border (0 outside).
    let values: Vec<u32> = (0..40).map(|_| rng.next_u32()).collect();
    let mut t = upload(device, ChannelKind::Signed, 4, 1, [40, 1, 1], 0, &values, false);
    set_state(&mut t, false, false, AddressMode::Border, [0.0; 4]);
    let obj = device.texture_object(&t.desc).expect("texture");
    let idx: Vec<u32> = (0..n).map(|_| (rng.below(50) as i32 - 5) as u32).collect();
    let got = launch(module, device, "tex1d_fetch_int", &obj, std::slice::from_ref(&idx), 1, n);
    for i in 0..n {
        let k = idx[i] as i32;
        let want = if (0..40).contains(&k) { values[k as usize] } else { 0 };
        assert_eq!(got[i], want, "{name} tex1d_fetch_int [{k}]");
    }

    // Integer s8 x 4, point sampling, clamp: sign-extended channels.
    let raw: Vec<u32> = (0..7 * 3 * 4).map(|_| rng.below(256) as u32).collect();
    let mut t = upload(device, ChannelKind::Signed, 1, 4, [7, 3, 1], 0, &raw, false);
    set_state(&mut t, false, false, AddressMode::Clamp, [0.0; 4]);
    let obj = device.texture_object(&t.desc).expect("texture");
    let (xs, ys) = (coordinates(rng, n, -2.0, 9.0), coordinates(rng, n, -2.0, 5.0));
    let got = launch(module, device, "tex2d_int4", &obj, &[bits(&xs), bits(&ys)], 4, n);
    for i in 0..n {
        let want = t.model.sample(&[xs[i], ys[i]], 0);
        assert_eq!(&got[4 * i..4 * i + 4], &want, "{name} tex2d_int4 at ({}, {})", xs[i], ys[i]);
    }
}

/// Surfaces: out = in * 2 + 1, then reads in and out of range.
fn surfaces(v: &Variant<'_>, rng: &mut common::Rng) {
    let Variant { device, module, name, n, .. } = *v;
    // Surfaces: out = in * 2 + 1 over 11 x 6 f32, then reads in and out of range.
    let (w, h) = (11usize, 6usize);
    let values = float_values(rng, w * h);
    let input = upload(device, ChannelKind::Float, 4, 1, [w, h, 1], 0, &values, false);
    let output = upload(device, ChannelKind::Float, 4, 1, [w, h, 1], 0, &vec![0; w * h], false);
    let (sin, sout) = (
        device.texture_object(&input.desc).expect("surface"),
        device.texture_object(&output.desc).expect("surface"),
    );
    module
        .kernel("surf2d_scale")
        .expect("kernel")
        .launch(
            [2, 2, 1],
            [8, 4, 1],
            0,
            &[Arg::from(&sin), Arg::from(&sout), Arg::from(w as i32), Arg::from(h as i32)],
        )
        .expect("surf2d_scale");
    let got: Vec<u32> = output
        .buffer
        .to_vec()
        .expect("read")
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    for (k, &v) in got.iter().enumerate() {
        let want = f32::from_bits(values[k]) * 2.0 + 1.0;
        assert_eq!(v, want.to_bits(), "{name} surf2d_scale [{k}]");
    }
    let xs: Vec<u32> = (0..n).map(|_| (rng.below(w as u64 + 6) as i32 - 3) as u32).collect();
    let ys: Vec<u32> = (0..n).map(|_| (rng.below(h as u64 + 6) as i32 - 3) as u32).collect();
    let (bx, by) = (device.buffer_from(&xs).expect("xs"), device.buffer_from(&ys).expect("ys"));
    let (zero, clamp) =
        (device.zeroed::<u32>(n).expect("out"), device.zeroed::<u32>(n).expect("out"));
    module
        .kernel("surf2d_boundary")
        .expect("kernel")
        .launch(
            [4, 1, 1],
            [64, 1, 1],
            0,
            &[
                Arg::from(&sin),
                Arg::from(&bx),
                Arg::from(&by),
                Arg::from(&zero),
                Arg::from(&clamp),
                Arg::from(n as i32),
            ],
        )
        .expect("surf2d_boundary");
    let (zero, clamp) = (zero.to_vec().expect("read"), clamp.to_vec().expect("read"));
    for i in 0..n {
        let (x, y) = (xs[i] as i32, ys[i] as i32);
        let inside = (0..w as i32).contains(&x) && (0..h as i32).contains(&y);
        let at = |x: i32, y: i32| values[y as usize * w + x as usize];
        assert_eq!(
            zero[i],
            if inside { at(x, y) } else { 0 },
            "{name} surf2d_boundary zero ({x}, {y})"
        );
        let clamped = at(x.clamp(0, w as i32 - 1), y.clamp(0, h as i32 - 1));
        assert_eq!(clamp[i], clamped, "{name} surf2d_boundary clamp ({x}, {y})");
    }
}

#[test]
fn texture_objects_fetch_and_filter_as_nvidia_documents() {
    let Some(device) = common::device() else { return };
    let paths = variants();
    // Every sampler state on nvcc's sm_80 build; two on the others.
    for (k, path) in paths.iter().enumerate() {
        run_variant(&device, path, k == 1);
    }
}

#[test]
fn every_warp_mode_validates_the_texture_kernels() {
    common::compile_every_warp_mode(&variants()[1]);
}

/// `tests/ptx/memory/texture_queries.ptx`: `txq`/`suq` read the descriptor's fields,
/// and a 3-D surface of two-word elements is written and read with `.zero` and `.clamp`
/// (its header comment is the contract).
#[test]
fn queries_and_a_three_dimensional_surface_of_pairs() {
    let Some(device) = common::device() else { return };
    let module =
        common::load(&device, &common::repo().join("tests/ptx/memory/texture_queries.ptx"));
    let texels = device.zeroed::<u32>(7 * 5 * 3).expect("texels");
    let tex = TextureDesc {
        address: texels.address(),
        width: 7,
        height: 5,
        depth: 1,
        layers: 3,
        row_pitch: 28,
        slice_pitch: 140,
        kind: ChannelKind::Float,
        channel_bytes: 4,
        channels: 1,
        normalized_coords: true,
        linear_filter: true,
        address_modes: [AddressMode::Mirror, AddressMode::Border, AddressMode::Wrap],
        ..TextureDesc::default()
    };
    let (w, h, d) = (4usize, 3usize, 2usize);
    let pairs = device.zeroed::<u32>(2 * w * h * d).expect("surface");
    let surf = TextureDesc {
        address: pairs.address(),
        width: w as u32,
        height: h as u32,
        depth: d as u32,
        row_pitch: 8 * w as u64,
        slice_pitch: (8 * w * h) as u64,
        kind: ChannelKind::Unsigned,
        channel_bytes: 4,
        channels: 2,
        ..TextureDesc::default()
    };
    let (tex, surf) =
        (device.texture_object(&tex).expect("tex"), device.texture_object(&surf).expect("surf"));
    let out = device.zeroed::<u32>(12).expect("out");
    module
        .kernel("queries")
        .expect("kernel")
        .launch([1, 1, 1], [1, 1, 1], 0, &[Arg::from(&tex), Arg::from(&surf), Arg::from(&out)])
        .expect("queries");
    // CUaddress_mode numbering: wrap 0, clamp 1, mirror 2, border 3.
    assert_eq!(out.to_vec().expect("read"), vec![7, 5, 1, 3, 1, 1, 2, 3, 1, 4, 3, 2]);

    let out = device.zeroed::<u32>(4 * w * h * d).expect("out");
    module
        .kernel("volume")
        .expect("kernel")
        .launch([1, 1, 1], [w as u32, h as u32, d as u32], 0, &[Arg::from(&surf), Arg::from(&out)])
        .expect("volume");
    let got = out.to_vec().expect("read");
    let pair = |x: usize, y: usize, z: usize| [(x + 16 * y) as u32, z as u32];
    for z in 0..d {
        for y in 0..h {
            for x in 0..w {
                let t = x + w * (y + h * z);
                let clamped = pair((x + 1).min(w - 1), y, z);
                let zero = if x == 0 { [0, 0] } else { pair(x - 1, y, z) };
                assert_eq!(
                    &got[4 * t..4 * t + 4],
                    &[clamped[0], clamped[1], zero[0], zero[1]],
                    "({x}, {y}, {z})"
                );
            }
        }
    }
    let stored = pairs.to_vec().expect("read");
    for z in 0..d {
        for y in 0..h {
            for x in 0..w {
                let at = 2 * (x + w * (y + h * z));
                assert_eq!(&stored[at..at + 2], &pair(x, y, z), "stored ({x}, {y}, {z})");
            }
        }
    }
}

/// `tests/ptx/memory/texref_legacy.ptx`: a `.global .texref` and a `.tex` variable,
/// bound by the host (`Module::bind_texture`) before each launch; rebinding changes what
/// the next launch reads.
#[test]
fn legacy_texture_references_bound_by_the_host() {
    let Some(device) = common::device() else { return };
    let module = common::load(&device, &common::repo().join("tests/ptx/memory/texref_legacy.ptx"));
    let mut rng = common::Rng(0x1e6a);
    let (w, h) = (9usize, 5usize);
    let mut image = upload(
        &device,
        ChannelKind::Float,
        4,
        1,
        [w, h, 1],
        0,
        &float_values(&mut rng, w * h),
        false,
    );
    let lut_values = float_values(&mut rng, 64);
    let mut lut = upload(&device, ChannelKind::Float, 4, 1, [64, 1, 1], 0, &lut_values, false);
    set_state(&mut lut, false, false, AddressMode::Clamp, [0.0; 4]);
    let lut_obj = device.texture_object(&lut.desc).expect("lut");
    let n = 64;
    let xs = coordinates(&mut rng, n, -1.5, 1.5);
    let ys = coordinates(&mut rng, n, -1.5, 1.5);
    let (bx, by) = (device.buffer_from(&xs).expect("xs"), device.buffer_from(&ys).expect("ys"));
    // Unbound references hold no descriptor: the launch traps instead of reading address 0.
    let out = device.zeroed::<u32>(2 * n).expect("out");
    let args = [Arg::from(&bx), Arg::from(&by), Arg::from(&out), Arg::from(n as i32)];
    let unbound =
        module.kernel("legacy_sample").expect("kernel").launch([2, 1, 1], [32, 1, 1], 0, &args);
    assert!(unbound.expect_err("unbound").to_string().contains("trap"));
    module.bind_texture("lut", &lut_obj).expect("bind lut");
    for (linear, mode) in [(true, AddressMode::Mirror), (false, AddressMode::Wrap)] {
        set_state(&mut image, linear, true, mode, [0.0; 4]);
        let obj = device.texture_object(&image.desc).expect("image");
        module.bind_texture("image", &obj).expect("bind image");
        let out = device.zeroed::<u32>(2 * n).expect("out");
        module
            .kernel("legacy_sample")
            .expect("kernel")
            .launch(
                [2, 1, 1],
                [32, 1, 1],
                0,
                &[Arg::from(&bx), Arg::from(&by), Arg::from(&out), Arg::from(n as i32)],
            )
            .expect("legacy_sample");
        let got = out.to_vec().expect("read");
        for i in 0..n {
            let want = image.model.sample(&[xs[i], ys[i]], 0)[0];
            assert_eq!(
                got[2 * i],
                want,
                "image linear {linear} {mode:?} at ({}, {})",
                xs[i],
                ys[i]
            );
            assert_eq!(got[2 * i + 1], lut_values[i], "lut [{i}]");
        }
    }
    assert!(module.bind_texture("no_such_reference", &lut_obj).is_err());
}

/// The CLI: `--arg tex:…` and a launch spec's `"texture"` argument make texture and
/// surface objects; the kernel reads them and the texels come back as buffers.
#[test]
fn textures_from_the_command_line_and_launch_specs() {
    let Some(_) = common::device() else { return };
    let ptx = common::repo().join("tests/kernels/texture.nvcc.sm_80.ptx");
    let ptx = ptx.to_str().expect("utf-8 path");
    // tex2d_float over a 4 x 2 f32 texture, linear, clamp: at (1.5, 0.5) texel (1, 0)
    // exactly, at (1.75, 1.0) the mean of four texels' quarters.
    let texels = [1.0f32, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0];
    let list = texels.map(|t| t.to_string()).join(",");
    let tex = format!("tex:f32:4x2:linear,clamp:{list}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ptxvk"))
        .args(["run", ptx, "--entry", "tex2d_float", "--grid", "1", "--block", "32"])
        .args(["--arg", &tex, "--arg", "buf:f32:1.5,1.75", "--arg", "buf:f32:0.5,1.0"])
        .args(["--arg", "buf:f32:zeros:2", "--arg", "s32:2", "--json"])
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let result =
        v["buffers"].as_array().and_then(|b| b.iter().find(|b| b["arg"] == 3)).expect("arg 3");
    // (1.75, 1.0) - 0.5 = (1.25, 0.5): weights 1/4 in x and 1/2 in y over texels
    // (1, 0), (2, 0), (1, 1), (2, 1).
    let corner = 0.75 * 0.5 * 2.0 + 0.25 * 0.5 * 4.0 + 0.75 * 0.5 * 32.0 + 0.25 * 0.5 * 64.0;
    assert_eq!(result["data"], serde_json::json!([2.0, corner]), "{v}");
    let texels_back =
        v["buffers"].as_array().and_then(|b| b.iter().find(|b| b["arg"] == 0)).expect("arg 0");
    assert_eq!(texels_back["data"], serde_json::json!(texels), "the texels read back");

    // A spec: surf2d_scale between two 3 x 2 surfaces.
    let dir = std::env::temp_dir().join(format!("ptxvk-texture-spec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let spec = serde_json::json!({
        "ptx": ptx,
        "entry": "surf2d_scale",
        "grid": [1, 1],
        "block": [4, 4],
        "args": [
            {"texture": "f32", "size": [3, 2], "data": [1, 2, 3, 4, 5, 6]},
            {"texture": "f32", "size": [3, 2]},
            {"scalar": "s32", "value": 3},
            {"scalar": "s32", "value": 2}
        ]
    });
    let path = dir.join("surface.json");
    std::fs::write(&path, spec.to_string()).expect("write spec");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ptxvk"))
        .args(["run", "--spec", path.to_str().expect("utf-8"), "--json"])
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let scaled =
        v["buffers"].as_array().and_then(|b| b.iter().find(|b| b["arg"] == 1)).expect("arg 1");
    assert_eq!(scaled["data"], serde_json::json!([3.0, 5.0, 7.0, 9.0, 11.0, 13.0]), "{v}");
    let _ = std::fs::remove_dir_all(&dir);

    // A texture whose data does not fill it is an error that says so.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ptxvk"))
        .args(["run", ptx, "--entry", "tex2d_float", "--grid", "1", "--block", "32"])
        .args(["--arg", "tex:f32:4x2:point:1,2,3"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("holds 32 bytes, not 12"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `tests/ptx/memory/texture_levels.ptx`: `txq.level` (PTX ISA 9.2 §9.7.10.5) gives
/// the width, height and depth of a mipmap level: level k of a texture has
/// `max(1, size >> k)` texels in each dimension (the layout `ptxvk_abi::texture`
/// documents, as CUDA's mipmapped arrays have them), for every level of a 3-D texture
/// whose sizes are not powers of two.
#[test]
fn level_queries_give_each_mipmap_level_its_size() {
    let Some(device) = common::device() else { return };
    let module = common::load(&device, &common::repo().join("tests/ptx/memory/texture_levels.ptx"));
    let (sizes, levels) = ([700u32, 37, 5], 10u32);
    let texels = device.zeroed::<u32>(4).expect("texels");
    let texel_bytes = 4;
    let tex = TextureDesc {
        address: texels.address(),
        width: sizes[0],
        height: sizes[1],
        depth: sizes[2],
        row_pitch: texel_bytes * u64::from(sizes[0]),
        slice_pitch: texel_bytes * u64::from(sizes[0] * sizes[1]),
        kind: ChannelKind::Float,
        channel_bytes: 4,
        channels: 1,
        levels,
        ..TextureDesc::default()
    };
    let tex = device.texture_object(&tex).expect("texture");
    let threads = 64u32;
    let asked: Vec<u32> = (0..threads).map(|t| t % levels).collect();
    let levels_buffer = device.buffer_from(&asked).expect("levels");
    let out = device.zeroed::<u32>(4 * threads as usize).expect("out");
    module
        .kernel("level_sizes")
        .expect("kernel")
        .launch(
            [1, 1, 1],
            [threads, 1, 1],
            0,
            &[Arg::from(&tex), Arg::from(&levels_buffer), Arg::from(&out)],
        )
        .expect("level_sizes");
    let got = out.to_vec().expect("read");
    for (t, &level) in asked.iter().enumerate() {
        let size = |s: u32| (s >> level).max(1);
        let want = [size(sizes[0]), size(sizes[1]), size(sizes[2]), (sizes[1] >> 2).max(1)];
        assert_eq!(&got[4 * t..4 * t + 4], &want, "thread {t}, level {level}");
    }
}

/// `reductions` of `tests/ptx/memory/texture_queries.ptx`: `sured` adds and maxima on
/// surface elements, `.zero` dropping those outside.
#[test]
fn surface_reductions_are_atomic_and_drop_what_is_outside() {
    let Some(device) = common::device() else { return };
    let module =
        common::load(&device, &common::repo().join("tests/ptx/memory/texture_queries.ptx"));
    let counts = device.zeroed::<u32>(8).expect("counts");
    let maxima = device.buffer_from(&[-100i32; 4]).expect("maxima");
    let surface = |address: u64, width: u32, kind: ChannelKind| TextureDesc {
        address,
        width,
        height: 1,
        depth: 1,
        row_pitch: 4 * u64::from(width),
        slice_pitch: 4 * u64::from(width),
        kind,
        channel_bytes: 4,
        channels: 1,
        ..TextureDesc::default()
    };
    let c = device
        .texture_object(&surface(counts.address(), 8, ChannelKind::Unsigned))
        .expect("surface");
    let m =
        device.texture_object(&surface(maxima.address(), 4, ChannelKind::Signed)).expect("surface");
    module
        .kernel("reductions")
        .expect("kernel")
        .launch([1, 1, 1], [64, 1, 1], 0, &[Arg::from(&c), Arg::from(&m)])
        .expect("reductions");
    assert_eq!(counts.to_vec().expect("read"), vec![8u32; 8]);
    let want: Vec<i32> = (0..4)
        .map(|k| (0..64).filter(|t| t % 6 == k).map(|t| t - 32).max().unwrap_or(-100))
        .collect();
    assert_eq!(maxima.to_vec().expect("read"), want);
}

/// `tests/ptx/memory/surface_wide_registers.ptx`: `suld.b`/`sust.b` with registers
/// wider than the access, as nvcc emits for `surf2Dread<unsigned char>` (a `.b8` access
/// in a `.b16` register). The model, from PTX ISA 9.2 §9.4.1's relaxed operand-size
/// rules for bit-size types: a load zero-extends the bytes (little-endian) to the
/// register, a store writes only the access's low bytes.
#[test]
fn surface_accesses_extend_and_chop_wide_registers() {
    let Some(device) = common::device() else { return };
    let module =
        common::load(&device, &common::repo().join("tests/ptx/memory/surface_wide_registers.ptx"));
    const WIDTH: usize = 64;
    const FILL: u8 = 0x5a;
    let threads = 8usize;
    // Bytes with the high bit set and clear, so a sign extension would show.
    let bytes: Vec<u8> = (0..WIDTH).map(|i| (i * 37 + 0x71) as u8).collect();
    let src = device.buffer_from(&bytes).expect("src");
    let dst = device.buffer_from(&[FILL; WIDTH]).expect("dst");
    let out = device.buffer_from(&vec![0xeeu8; 24 * threads]).expect("out");
    let surface = |address: u64| TextureDesc {
        address,
        width: WIDTH as u32,
        height: 1,
        depth: 1,
        row_pitch: WIDTH as u64,
        slice_pitch: WIDTH as u64,
        kind: ChannelKind::Unsigned,
        channel_bytes: 1,
        channels: 1,
        ..TextureDesc::default()
    };
    let s = device.texture_object(&surface(src.address())).expect("surface");
    let d = device.texture_object(&surface(dst.address())).expect("surface");
    module
        .kernel("wide")
        .expect("kernel")
        .launch(
            [1, 1, 1],
            [threads as u32, 1, 1],
            0,
            &[Arg::from(&s), Arg::from(&d), Arg::from(&out)],
        )
        .expect("wide");
    let mut want_out = vec![0xeeu8; 24 * threads];
    let mut want_dst = vec![FILL; WIDTH];
    for t in 0..threads {
        let (x, o) = (4 * t, 24 * t);
        let half = u64::from(u16::from_le_bytes([bytes[x], bytes[x + 1]]));
        want_out[o..o + 8].copy_from_slice(&half.to_le_bytes());
        want_out[o + 8..o + 12].copy_from_slice(&u32::from(bytes[x + 1]).to_le_bytes());
        for (k, at) in [(x, 12), (x + 2, 14), (x + 3, 16)] {
            want_out[o + at..o + at + 2].copy_from_slice(&u16::from(bytes[k]).to_le_bytes());
        }
        let step = 0x101 * t as u64;
        let stored = 0xa580 + step;
        want_dst[x] = stored as u8;
        want_dst[x + 1] = stored as u8;
        want_dst[x + 2] = stored as u8;
        want_dst[x + 3] = (0xb481 + step) as u8;
        let wide = (0x1122_3344_c3d2 + step).to_le_bytes();
        want_dst[32 + x..34 + x].copy_from_slice(&wide[..2]);
    }
    assert_eq!(out.to_vec().expect("read"), want_out, "loads");
    assert_eq!(dst.to_vec().expect("read"), want_dst, "stores");
}

/// `tests/ptx/memory/independent_samplers.ptx`: separate samplers (PTX's independent
/// texture mode) passed as `.samplerref` parameters, bound by the host, or initialized
/// in the module, override the texture's filter and address modes; the texture keeps
/// its normalized coordinates unless the sampler forces unnormalized ones.
#[test]
fn separate_samplers_override_the_texture_state() {
    let Some(device) = common::device() else { return };
    let module =
        common::load(&device, &common::repo().join("tests/ptx/memory/independent_samplers.ptx"));
    let mut rng = common::Rng(0x5a3b);
    let (w, h) = (7usize, 5usize);
    let mut image = upload(
        &device,
        ChannelKind::Float,
        4,
        4,
        [w, h, 1],
        0,
        &float_values(&mut rng, 4 * w * h),
        false,
    );
    // The texture's own state, which no fetch through a sampler uses but its
    // normalized coordinates.
    set_state(&mut image, false, true, AddressMode::Clamp, [0.0; 4]);
    let texture = device.texture_object(&image.desc).expect("texture");
    let border = [0.25, -1.5, 2.0, 0.5];
    let param_sampler = SamplerDesc {
        linear_filter: true,
        address_modes: [AddressMode::Mirror, AddressMode::Border, AddressMode::Clamp],
        border,
        ..SamplerDesc::default()
    };
    let bound_sampler =
        SamplerDesc { address_modes: [AddressMode::Wrap; 3], ..SamplerDesc::default() };
    let smp = device.sampler_object(&param_sampler).expect("sampler");
    let bound = device.sampler_object(&bound_sampler).expect("sampler");
    module.bind_texture("bound", &bound).expect("bind");
    let n = 96;
    let xs = coordinates(&mut rng, n, -1.5, 1.5);
    let ys = coordinates(&mut rng, n, -1.5, 1.5);
    let (bx, by) = (device.buffer_from(&xs).expect("xs"), device.buffer_from(&ys).expect("ys"));
    let out = device.zeroed::<u32>(16 * n).expect("out");
    module
        .kernel("sample")
        .expect("kernel")
        .launch(
            [n.div_ceil(32) as u32, 1, 1],
            [32, 1, 1],
            0,
            &[
                Arg::from(&bx),
                Arg::from(&by),
                Arg::from(&out),
                Arg::from(n as u32),
                Arg::from(&texture),
                Arg::from(&smp),
            ],
        )
        .expect("sample");
    let got = out.to_vec().expect("read");
    // The model of each sampler: the texture's texels under the sampler's state.
    let with = |linear: bool, normalized: bool, modes: [AddressMode; 3], border: [f32; 4]| Model {
        linear,
        normalized,
        modes,
        border,
        texels: image.model.texels.clone(),
        ..image.model
    };
    let models = [
        with(true, true, param_sampler.address_modes, border),
        with(true, true, [AddressMode::Border, AddressMode::Wrap, AddressMode::Clamp], [0.0; 4]),
        with(false, true, [AddressMode::Wrap; 3], [0.0; 4]),
        with(false, false, [AddressMode::Clamp, AddressMode::Mirror, AddressMode::Clamp], [0.0; 4]),
    ];
    for i in 0..n {
        for (k, model) in models.iter().enumerate() {
            let at = if k == 3 { [xs[i] * w as f32, ys[i] * h as f32] } else { [xs[i], ys[i]] };
            let want = model.sample(&at, 0);
            assert_eq!(
                got[16 * i + 4 * k..16 * i + 4 * k + 4],
                want,
                "sampler {k} at ({}, {})",
                xs[i],
                ys[i]
            );
        }
    }
    let q = device.zeroed::<u32>(8).expect("queries");
    module
        .kernel("queries")
        .expect("kernel")
        .launch([1, 1, 1], [1, 1, 1], 0, &[Arg::from(&q), Arg::from(&smp)])
        .expect("queries");
    let (linear, border_mode, wrap, mirror) = (1, AddressMode::Border as u32, 0, 2);
    assert_eq!(
        q.to_vec().expect("read"),
        [linear, mirror, border_mode, 0, linear, border_mode, wrap, 0]
    );
    // A sampler is no texture: fetching from one traps.
    let err = module
        .kernel("sample")
        .expect("kernel")
        .launch(
            [1, 1, 1],
            [1, 1, 1],
            0,
            &[
                Arg::from(&bx),
                Arg::from(&by),
                Arg::from(&out),
                Arg::from(1u32),
                Arg::from(&smp),
                Arg::from(&smp),
            ],
        )
        .expect_err("a sampler as the texture");
    assert!(err.to_string().contains("trap"), "{err}");
}

/// `tests/ptx/memory/texture_offsets.ptx`: texel offsets on float and integer
/// coordinates, `tld4` and `.level` fetches; `.f16x2` results (each float result
/// rounded to the nearest half); the residency predicate.
#[test]
fn texel_offsets_half_results_and_residency() {
    let Some(device) = common::device() else { return };
    let module =
        common::load(&device, &common::repo().join("tests/ptx/memory/texture_offsets.ptx"));
    let mut rng = common::Rng(0x0ff5);
    let (w, h) = (9usize, 6usize);
    let mut t = upload(
        &device,
        ChannelKind::Float,
        4,
        4,
        [w, h, 1],
        0,
        &float_values(&mut rng, 4 * w * h),
        false,
    );
    let n = 128;
    for (linear, normalized, mode) in [
        (true, false, AddressMode::Border),
        (true, true, AddressMode::Wrap),
        (false, true, AddressMode::Mirror),
        (false, false, AddressMode::Clamp),
    ] {
        set_state(&mut t, linear, normalized, mode, [0.5, -2.0, 1.25, 3.0]);
        let obj = device.texture_object(&t.desc).expect("texture");
        let (xs, ys) = if normalized {
            (coordinates(&mut rng, n, -1.5, 1.5), coordinates(&mut rng, n, -1.5, 1.5))
        } else {
            (coordinates(&mut rng, n, -3.0, 12.0), coordinates(&mut rng, n, -3.0, 9.0))
        };
        let (bx, by) = (device.buffer_from(&xs).expect("xs"), device.buffer_from(&ys).expect("ys"));
        let out = device.zeroed::<u32>(20 * n).expect("out");
        module
            .kernel("offsets")
            .expect("kernel")
            .launch(
                [n.div_ceil(64) as u32, 1, 1],
                [64, 1, 1],
                0,
                &[
                    Arg::from(&obj),
                    Arg::from(&bx),
                    Arg::from(&by),
                    Arg::from(&out),
                    Arg::from(n as u32),
                ],
            )
            .expect("offsets");
        let got = out.to_vec().expect("read");
        let state = format!("linear {linear} normalized {normalized} {mode:?}");
        for i in 0..n {
            let (x, y) = (xs[i], ys[i]);
            let o = &got[20 * i..20 * i + 20];
            assert_eq!(
                o[0..4],
                t.model.sample_offset(&[x, y], &[-1, 2], 0),
                "{state} offsets at ({x}, {y})"
            );
            let plain = t.model.sample(&[x, y], 0).map(f32::from_bits);
            let half = |v: f32| u32::from(half::f16::from_f32(v).to_bits());
            let packed =
                [half(plain[0]) | half(plain[1]) << 16, half(plain[2]) | half(plain[3]) << 16];
            assert_eq!(o[4..6], packed, "{state} f16x2 at ({x}, {y})");
            let idx =
                [t.model.index(0, x.floor() as i64 + 3), t.model.index(1, y.floor() as i64 - 2)];
            assert_eq!(o[6..10], t.model.texel(&idx, 0), "{state} integer offsets at ({x}, {y})");
            let cx = t.model.coordinate(0, x) + 1.0;
            let cy = t.model.coordinate(1, y) - 1.0;
            let (x0, y0) = ((cx - 0.5).floor() as i64, (cy - 0.5).floor() as i64);
            let gathered: Vec<u32> = [(0, 1), (1, 1), (1, 0), (0, 0)]
                .iter()
                .map(|&(dx, dy)| {
                    t.model.texel(&[t.model.index(0, x0 + dx), t.model.index(1, y0 + dy)], 0)[0]
                })
                .collect();
            assert_eq!(o[10..14], gathered[..], "{state} tld4 offsets at ({x}, {y})");
            assert_eq!(o[14], 1, "resident");
            assert_eq!(
                o[15..19],
                t.model.sample_offset(&[x, y], &[2, 1], 0),
                "{state} level 0 offsets at ({x}, {y})"
            );
        }
    }
}
