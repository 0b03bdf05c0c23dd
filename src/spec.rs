//! The launch-spec format (README, *Launch specs*): JSON files and the short `--arg`
//! forms, element notation, and the decoding of result buffers. Unknown JSON keys are
//! ignored, so other tools may annotate specs.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// Element type names of buffers and scalars.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElemType {
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    Bf16,
    F32,
    F64,
}

impl ElemType {
    pub fn parse(s: &str) -> Option<ElemType> {
        use ElemType::*;
        Some(match s {
            "u8" => U8,
            "u16" => U16,
            "u32" => U32,
            "u64" => U64,
            "s8" => S8,
            "s16" => S16,
            "s32" => S32,
            "s64" => S64,
            "f16" => F16,
            "bf16" => Bf16,
            "f32" => F32,
            "f64" => F64,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        use ElemType::*;
        match self {
            U8 => "u8",
            U16 => "u16",
            U32 => "u32",
            U64 => "u64",
            S8 => "s8",
            S16 => "s16",
            S32 => "s32",
            S64 => "s64",
            F16 => "f16",
            Bf16 => "bf16",
            F32 => "f32",
            F64 => "f64",
        }
    }

    pub fn size(self) -> usize {
        use ElemType::*;
        match self {
            U8 | S8 => 1,
            U16 | S16 | F16 | Bf16 => 2,
            U32 | S32 | F32 => 4,
            U64 | S64 | F64 => 8,
        }
    }

    fn is_float(self) -> bool {
        matches!(self, ElemType::F16 | ElemType::Bf16 | ElemType::F32 | ElemType::F64)
    }

    fn is_signed(self) -> bool {
        matches!(self, ElemType::S8 | ElemType::S16 | ElemType::S32 | ElemType::S64)
    }

    /// Encodes one element given as JSON (a number, "nan", "inf", "-inf" or "0x…").
    pub fn encode(self, v: &Value) -> Result<Vec<u8>, String> {
        match v {
            Value::String(s) => self.encode_str(s),
            Value::Number(n) => {
                if self.is_float() {
                    let f = n.as_f64().ok_or_else(|| format!("{n} is not a number"))?;
                    Ok(self.encode_f64(f))
                } else if let Some(u) = n.as_u64() {
                    self.encode_int(u as i128)
                } else if let Some(i) = n.as_i64() {
                    self.encode_int(i as i128)
                } else {
                    Err(format!("{n} is not an integer, as a {} element must be", self.name()))
                }
            }
            other => Err(format!(
                "expected a number or a string for a {} element, found {other}",
                self.name()
            )),
        }
    }

    /// Encodes one element written as text (the `--arg` forms and JSON strings).
    pub fn encode_str(self, s: &str) -> Result<Vec<u8>, String> {
        let t = s.trim();
        if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            // The exact bit pattern.
            let bits = u64::from_str_radix(hex, 16)
                .map_err(|_| format!("`{t}` is not a hexadecimal bit pattern"))?;
            let size = self.size();
            if size < 8 && bits >> (size * 8) != 0 {
                return Err(format!("bit pattern `{t}` does not fit in {} bits", size * 8));
            }
            return Ok(bits.to_le_bytes()[..size].to_vec());
        }
        if self.is_float() {
            let f = match t {
                "nan" | "NaN" => f64::NAN,
                "inf" | "+inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                _ => {
                    t.parse::<f64>().map_err(|_| format!("`{t}` is not a {} value", self.name()))?
                }
            };
            return Ok(self.encode_f64(f));
        }
        let v: i128 = t.parse().map_err(|_| format!("`{t}` is not a {} value", self.name()))?;
        self.encode_int(v)
    }

    fn encode_int(self, v: i128) -> Result<Vec<u8>, String> {
        let bits = self.size() as u32 * 8;
        let (lo, hi) = if self.is_signed() {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        };
        if v < lo || v > hi {
            return Err(format!("{v} is out of range for {}", self.name()));
        }
        Ok((v as u128 as u64).to_le_bytes()[..self.size()].to_vec())
    }

    /// Floats round to nearest even (`as f32`, `half`'s conversions).
    fn encode_f64(self, f: f64) -> Vec<u8> {
        match self {
            ElemType::F16 => half::f16::from_f64(f).to_bits().to_le_bytes().to_vec(),
            ElemType::Bf16 => half::bf16::from_f64(f).to_bits().to_le_bytes().to_vec(),
            ElemType::F32 => (f as f32).to_le_bytes().to_vec(),
            _ => f.to_le_bytes().to_vec(),
        }
    }

    /// Decodes one element to JSON: integers exactly; floats as numbers, or "nan",
    /// "inf", "-inf".
    pub fn decode(self, b: &[u8]) -> Value {
        let mut a = [0u8; 8];
        a[..self.size()].copy_from_slice(&b[..self.size()]);
        let raw = u64::from_le_bytes(a);
        let float = |f: f64| {
            if f.is_nan() {
                json!("nan")
            } else if f.is_infinite() {
                json!(if f > 0.0 { "inf" } else { "-inf" })
            } else {
                json!(f)
            }
        };
        match self {
            ElemType::U8 | ElemType::U16 | ElemType::U32 | ElemType::U64 => json!(raw),
            ElemType::S8 => json!(raw as u8 as i8),
            ElemType::S16 => json!(raw as u16 as i16),
            ElemType::S32 => json!(raw as u32 as i32),
            ElemType::S64 => json!(raw as i64),
            ElemType::F16 => float(half::f16::from_bits(raw as u16).to_f64()),
            ElemType::Bf16 => float(half::bf16::from_bits(raw as u16).to_f64()),
            // f32 → f64 is exact, so the JSON number round-trips to the same f32.
            ElemType::F32 => float(f32::from_bits(raw as u32) as f64),
            ElemType::F64 => float(f64::from_bits(raw)),
        }
    }
}

/// One kernel argument of a launch spec.
#[derive(Clone, Debug, PartialEq)]
pub enum SpecArg {
    /// A device buffer with these bytes; the parameter receives its address.
    Buffer { ty: ElemType, bytes: Vec<u8> },
    /// A device buffer of `len` elements as `cudaMalloc` gives one, which initcheck
    /// reports reads of until something writes it (zeros on this runtime).
    Uninitialized { ty: ElemType, len: u64 },
    /// By-value bytes.
    Value(Vec<u8>),
    /// A texture or surface object over texels of `ty` with these bytes (innermost
    /// dimension first, channels interleaved); the parameter receives its handle, and
    /// the texels are read back as a buffer (surface writes included).
    Texture { ty: ElemType, bytes: Vec<u8>, sampler: TextureSpec },
}

/// The layout and sampler state of a texture argument.
#[derive(Clone, Debug, PartialEq)]
pub struct TextureSpec {
    /// 1, 2 or 4 channels per texel.
    pub channels: u32,
    /// Width, height, depth (1 for absent dimensions).
    pub size: [u32; 3],
    /// Layers of a layered texture (0: not layered).
    pub layers: u32,
    pub linear: bool,
    pub normalized_coords: bool,
    /// 8- and 16-bit integers read as normalized floats.
    pub read_normalized: bool,
    pub address: [crate::AddressMode; 3],
    pub border: [f32; 4],
    /// sRGB decode of 8-bit R, G, B channels.
    pub srgb: bool,
    /// Used as a surface (`suld`/`sust`): ptxvk's handle is the same, but a CUDA
    /// driver's reference run (`compare --cuda`) makes a surface object.
    pub surface: bool,
}

impl TextureSpec {
    /// The texture description of texels at device address `address`.
    pub fn desc(&self, ty: ElemType, address: u64) -> Result<crate::TextureDesc, String> {
        use crate::ChannelKind::*;
        let (kind, channel_bytes) = match ty {
            ElemType::U8 => (Unsigned, 1),
            ElemType::U16 => (Unsigned, 2),
            ElemType::U32 => (Unsigned, 4),
            ElemType::S8 => (Signed, 1),
            ElemType::S16 => (Signed, 2),
            ElemType::S32 => (Signed, 4),
            ElemType::F16 => (Float, 2),
            ElemType::F32 => (Float, 4),
            other => return Err(format!("textures have no `{}` texels", other.name())),
        };
        let row_pitch =
            u64::from(self.size[0]) * u64::from(channel_bytes) * u64::from(self.channels);
        Ok(crate::TextureDesc {
            address,
            width: self.size[0],
            height: self.size[1],
            depth: self.size[2],
            layers: self.layers,
            row_pitch,
            slice_pitch: row_pitch * u64::from(self.size[1]),
            kind,
            channel_bytes,
            channels: self.channels,
            normalized_coords: self.normalized_coords,
            read_normalized: self.read_normalized,
            linear_filter: self.linear,
            address_modes: self.address,
            border: self.border,
            srgb: self.srgb,
            ..crate::TextureDesc::default()
        })
    }

    /// Texels the layout holds.
    fn texels(&self) -> u64 {
        self.size.iter().map(|&s| u64::from(s)).product::<u64>() * u64::from(self.layers.max(1))
    }
}

/// `wrap`, `clamp`, `mirror` or `border`.
fn address_mode(s: &str) -> Option<crate::AddressMode> {
    Some(match s {
        "wrap" => crate::AddressMode::Wrap,
        "clamp" => crate::AddressMode::Clamp,
        "mirror" => crate::AddressMode::Mirror,
        "border" => crate::AddressMode::Border,
        _ => return None,
    })
}

/// A complete launch.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchSpec {
    /// The PTX files, linked into one program (usually one file).
    pub ptx: Vec<PathBuf>,
    pub entry: Option<String>,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    pub args: Vec<SpecArg>,
}

/// Reads a launch spec file; `ptx` is resolved relative to the spec's folder.
pub fn load(path: &Path) -> Result<LaunchSpec, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read launch spec {}: {e}", path.display()))?;
    let base = path.parent().unwrap_or(Path::new("."));
    parse(&text, base).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses launch-spec JSON.
pub fn parse(text: &str, base: &Path) -> Result<LaunchSpec, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
    let obj = v.as_object().ok_or("a launch spec must be a JSON object")?;
    let ptx: Vec<&str> = match obj.get("ptx") {
        Some(Value::String(one)) => vec![one],
        Some(Value::Array(all)) if !all.is_empty() => all
            .iter()
            .map(|p| p.as_str().ok_or("\"ptx\" must be a path or a list of paths"))
            .collect::<Result<_, _>>()?,
        _ => return Err("missing \"ptx\": the PTX file's path (or a list of files to link)".into()),
    };
    let entry = match obj.get("entry") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => return Err(format!("\"entry\" must be a string, found {other}")),
    };
    let grid = dims(obj.get("grid").ok_or("missing \"grid\"")?, "grid")?;
    let block = dims(obj.get("block").ok_or("missing \"block\"")?, "block")?;
    let shared_bytes = match obj.get("shared_bytes") {
        None | Some(Value::Null) => 0,
        Some(v) => v
            .as_u64()
            .and_then(|x| u32::try_from(x).ok())
            .ok_or("\"shared_bytes\" must be a non-negative integer")?,
    };
    let args = match obj.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(i, a)| arg(a).map_err(|e| format!("args[{i}]: {e}")))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("\"args\" must be an array".into()),
    };
    Ok(LaunchSpec {
        ptx: ptx.iter().map(|p| base.join(p)).collect(),
        entry,
        grid,
        block,
        shared_bytes,
        args,
    })
}

fn dims(v: &Value, what: &str) -> Result<[u32; 3], String> {
    let one = |x: &Value| -> Result<u32, String> {
        x.as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("\"{what}\" components must be positive integers, found {x}"))
    };
    let list: Vec<u32> = match v {
        Value::Array(a) => a.iter().map(one).collect::<Result<_, _>>()?,
        n @ Value::Number(_) => vec![one(n)?],
        other => return Err(format!("\"{what}\" must be 1 to 3 numbers, found {other}")),
    };
    to_dim3(&list)
        .ok_or_else(|| format!("\"{what}\" must have 1 to 3 numbers, found {}", list.len()))
}

fn to_dim3(list: &[u32]) -> Option<[u32; 3]> {
    match *list {
        [x] => Some([x, 1, 1]),
        [x, y] => Some([x, y, 1]),
        [x, y, z] => Some([x, y, z]),
        _ => None,
    }
}

fn elem_type(v: &Value) -> Result<ElemType, String> {
    let s = v.as_str().ok_or_else(|| format!("element type must be a string, found {v}"))?;
    ElemType::parse(s).ok_or_else(|| {
        format!(
            "unknown element type `{s}` (expected u8 u16 u32 u64 s8 s16 s32 s64 f16 bf16 f32 f64)"
        )
    })
}

fn arg(v: &Value) -> Result<SpecArg, String> {
    let obj = v.as_object().ok_or("each argument must be a JSON object")?;
    if let Some(t) = obj.get("buffer") {
        let ty = elem_type(t)?;
        let forms = ["data", "len", "hex"].iter().filter(|k| obj.contains_key(**k)).count();
        if forms != 1 {
            return Err("a buffer needs exactly one of \"data\", \"len\" or \"hex\"".into());
        }
        if obj.get("uninitialized").and_then(Value::as_bool) == Some(true) {
            let n = obj
                .get("len")
                .and_then(Value::as_u64)
                .ok_or("an uninitialized buffer needs \"len\"")?;
            n.checked_mul(ty.size() as u64)
                .filter(|&s| s <= (1 << 34))
                .ok_or("\"len\" is too large")?;
            return Ok(SpecArg::Uninitialized { ty, len: n });
        }
        let bytes = if let Some(d) = obj.get("data") {
            let items = d.as_array().ok_or("\"data\" must be an array")?;
            let mut bytes = Vec::with_capacity(items.len() * ty.size());
            for (i, x) in items.iter().enumerate() {
                bytes.extend(ty.encode(x).map_err(|e| format!("data[{i}]: {e}"))?);
            }
            bytes
        } else if let Some(n) = obj.get("len") {
            let n = n.as_u64().ok_or("\"len\" must be a non-negative integer")?;
            let size = n
                .checked_mul(ty.size() as u64)
                .filter(|&s| s <= (1 << 34))
                .ok_or("\"len\" is too large")?;
            vec![0u8; size as usize]
        } else {
            let h = obj.get("hex").and_then(Value::as_str).ok_or("\"hex\" must be a string")?;
            let b = hex_decode(h)?;
            if b.len() % ty.size() != 0 {
                return Err(format!(
                    "\"hex\" has {} bytes, not a whole number of {} elements",
                    b.len(),
                    ty.name()
                ));
            }
            b
        };
        return Ok(SpecArg::Buffer { ty, bytes });
    }
    if let Some(t) = obj.get("scalar") {
        let ty = elem_type(t)?;
        let value = obj.get("value").ok_or("a scalar needs \"value\"")?;
        return Ok(SpecArg::Value(ty.encode(value)?));
    }
    if let Some(h) = obj.get("bytes") {
        let h = h.as_str().ok_or("\"bytes\" must be a hex string")?;
        return Ok(SpecArg::Value(hex_decode(h)?));
    }
    if let Some(t) = obj.get("texture") {
        return texture_arg(t, obj);
    }
    Err("an argument must have \"buffer\", \"scalar\", \"bytes\" or \"texture\"".into())
}

/// `{"texture": TYPE, "size": [W, H, D], "channels": C, "layers": L, "filter": "point" |
/// "linear", "address": MODE or [MODE, MODE, MODE], "normalized_coords": bool,
/// "read_normalized": bool, "srgb": bool, "surface": bool, "border": [4 floats],
/// "data": [...] | "hex": "..."}`.
fn texture_arg(t: &Value, obj: &serde_json::Map<String, Value>) -> Result<SpecArg, String> {
    let ty = elem_type(t)?;
    let size = dims(obj.get("size").ok_or("a texture needs \"size\"")?, "size")?;
    let count = |key: &str, default: u64| -> Result<u32, String> {
        match obj.get(key) {
            None => Ok(default as u32),
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| format!("\"{key}\" must be a non-negative integer")),
        }
    };
    let flag = |key: &str| obj.get(key).and_then(Value::as_bool).unwrap_or(false);
    let linear = match obj.get("filter").and_then(Value::as_str) {
        None | Some("point") => false,
        Some("linear") => true,
        Some(other) => return Err(format!("unknown filter `{other}` (point or linear)")),
    };
    let modes: Vec<&str> = match obj.get("address") {
        None => vec!["clamp"],
        Some(Value::String(m)) => vec![m.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        Some(_) => return Err("\"address\" is a mode or a list of modes".into()),
    };
    let mut address = [crate::AddressMode::Clamp; 3];
    for (k, slot) in address.iter_mut().enumerate() {
        let m = modes.get(k).or(modes.last()).copied().unwrap_or("clamp");
        *slot = address_mode(m)
            .ok_or_else(|| format!("unknown address mode `{m}` (wrap, clamp, mirror, border)"))?;
    }
    let mut border = [0f32; 4];
    if let Some(b) = obj.get("border").and_then(Value::as_array) {
        for (k, v) in b.iter().take(4).enumerate() {
            border[k] = v.as_f64().ok_or("\"border\" holds numbers")? as f32;
        }
    }
    let sampler = TextureSpec {
        channels: count("channels", 1)?,
        size,
        layers: count("layers", 0)?,
        linear,
        normalized_coords: flag("normalized_coords"),
        read_normalized: flag("read_normalized"),
        address,
        border,
        srgb: flag("srgb"),
        surface: flag("surface"),
    };
    let bytes = if let Some(d) = obj.get("data") {
        let items = d.as_array().ok_or("\"data\" must be an array")?;
        let mut bytes = Vec::new();
        for (i, x) in items.iter().enumerate() {
            bytes.extend(ty.encode(x).map_err(|e| format!("data[{i}]: {e}"))?);
        }
        bytes
    } else if let Some(h) = obj.get("hex").and_then(Value::as_str) {
        hex_decode(h)?
    } else {
        Vec::new()
    };
    texture(ty, bytes, sampler)
}

/// A texture argument, its bytes checked against its layout (none: zeros).
fn texture(ty: ElemType, mut bytes: Vec<u8>, sampler: TextureSpec) -> Result<SpecArg, String> {
    let want = sampler.texels() * u64::from(sampler.channels) * ty.size() as u64;
    if bytes.is_empty() {
        bytes = vec![0; want as usize];
    }
    if bytes.len() as u64 != want {
        return Err(format!(
            "a texture of {} texels of {} {} channels holds {want} bytes, not {}",
            sampler.texels(),
            sampler.channels,
            ty.name(),
            bytes.len()
        ));
    }
    sampler.desc(ty, 0)?;
    Ok(SpecArg::Texture { ty, bytes, sampler })
}

/// `tex:TYPE[xC]:W[xH[xD]]:OPTIONS:VALUES`: OPTIONS a comma list of `point`/`linear`,
/// an address mode (`wrap`, `clamp`, `mirror`, `border`), `normalized`, `readnorm`,
/// `srgb`, `surface`, `layers=N`; VALUES as a buffer's (`zeros` for none).
fn parse_texture_arg(s: &str, rest: &str) -> Result<SpecArg, String> {
    let fields: Vec<&str> = rest.splitn(4, ':').collect();
    let [ty, size, options, values] = fields.as_slice() else {
        return Err(format!("`{s}`: expected tex:TYPE[xC]:WxHxD:OPTIONS:VALUES"));
    };
    let (t, channels) = match ty.split_once('x') {
        Some((t, c)) => {
            (t, c.parse::<u32>().map_err(|_| format!("`{s}`: `{c}` is no channel count"))?)
        }
        None => (*ty, 1),
    };
    let ty = ElemType::parse(t).ok_or_else(|| format!("`{s}`: unknown element type `{t}`"))?;
    let list: Vec<u32> = size
        .split('x')
        .map(|n| n.parse::<u32>().ok().filter(|&n| n > 0))
        .collect::<Option<_>>()
        .ok_or_else(|| format!("`{s}`: `{size}` is not W[xH[xD]]"))?;
    let size = to_dim3(&list).ok_or_else(|| format!("`{s}`: `{size}` has 1 to 3 sizes"))?;
    let mut sampler = TextureSpec {
        channels,
        size,
        layers: 0,
        linear: false,
        normalized_coords: false,
        read_normalized: false,
        address: [crate::AddressMode::Clamp; 3],
        border: [0.0; 4],
        srgb: false,
        surface: false,
    };
    for o in options.split(',').filter(|o| !o.is_empty()) {
        match o {
            "srgb" => sampler.srgb = true,
            "surface" => sampler.surface = true,
            "point" => sampler.linear = false,
            "linear" => sampler.linear = true,
            "normalized" => sampler.normalized_coords = true,
            "readnorm" => sampler.read_normalized = true,
            o if o.starts_with("layers=") => {
                sampler.layers =
                    o[7..].parse().map_err(|_| format!("`{s}`: `{o}` is no layer count"))?;
            }
            o => {
                let m = address_mode(o)
                    .ok_or_else(|| format!("`{s}`: unknown texture option `{o}`"))?;
                sampler.address = [m; 3];
            }
        }
    }
    let bytes = if *values == "zeros" {
        Vec::new()
    } else {
        let mut b = Vec::new();
        for x in values.split(',') {
            b.extend(ty.encode_str(x).map_err(|e| format!("`{s}`: {e}"))?);
        }
        b
    };
    texture(ty, bytes, sampler).map_err(|e| format!("`{s}`: {e}"))
}

/// Parses the short `--arg` forms: `buf:f32:1,2,3`, `buf:u32:zeros:1024`,
/// `buf:u32:uninit:1024`, `buf:u8:hex:0a0b`, `u32:7`, `f32:1.5`, `bytes:0a0b`.
pub fn parse_short_arg(s: &str) -> Result<SpecArg, String> {
    let mut parts = s.splitn(2, ':');
    let head = parts.next().unwrap_or("");
    let rest = parts
        .next()
        .ok_or_else(|| format!("`{s}`: expected TYPE:VALUE, buf:TYPE:…, or bytes:HEX"))?;
    match head {
        "bytes" => Ok(SpecArg::Value(hex_decode(rest).map_err(|e| format!("`{s}`: {e}"))?)),
        "tex" => parse_texture_arg(s, rest),
        "buf" => {
            let (t, data) =
                rest.split_once(':').ok_or_else(|| format!("`{s}`: expected buf:TYPE:VALUES"))?;
            let ty =
                ElemType::parse(t).ok_or_else(|| format!("`{s}`: unknown element type `{t}`"))?;
            if let Some(n) = data.strip_prefix("uninit:") {
                let len: u64 =
                    n.parse().map_err(|_| format!("`{s}`: `{n}` is not an element count"))?;
                len.checked_mul(ty.size() as u64)
                    .filter(|&s| s <= (1 << 34))
                    .ok_or("buffer too large")?;
                return Ok(SpecArg::Uninitialized { ty, len });
            }
            let bytes = if let Some(n) = data.strip_prefix("zeros:") {
                let n: u64 =
                    n.parse().map_err(|_| format!("`{s}`: `{n}` is not an element count"))?;
                let size = n
                    .checked_mul(ty.size() as u64)
                    .filter(|&s| s <= (1 << 34))
                    .ok_or("buffer too large")?;
                vec![0u8; size as usize]
            } else if let Some(h) = data.strip_prefix("hex:") {
                hex_decode(h).map_err(|e| format!("`{s}`: {e}"))?
            } else if data.is_empty() {
                Vec::new()
            } else {
                let mut b = Vec::new();
                for x in data.split(',') {
                    b.extend(ty.encode_str(x).map_err(|e| format!("`{s}`: {e}"))?);
                }
                b
            };
            if bytes.len() % ty.size() != 0 {
                return Err(format!("`{s}`: not a whole number of {} elements", ty.name()));
            }
            Ok(SpecArg::Buffer { ty, bytes })
        }
        t => {
            let ty =
                ElemType::parse(t).ok_or_else(|| format!("`{s}`: unknown argument kind `{t}`"))?;
            Ok(SpecArg::Value(ty.encode_str(rest).map_err(|e| format!("`{s}`: {e}"))?))
        }
    }
}

/// Parses `X[,Y[,Z]]`.
pub fn parse_dims(s: &str) -> Result<[u32; 3], String> {
    let list: Vec<u32> = s
        .split(',')
        .map(|x| {
            x.trim()
                .parse::<u32>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("`{x}` is not a positive integer"))
        })
        .collect::<Result<_, _>>()?;
    to_dim3(&list).ok_or_else(|| format!("`{s}`: expected 1 to 3 numbers"))
}

pub fn hex_decode(s: &str) -> Result<Vec<u8>, String> {
    let s = s.trim();
    if !s.len().is_multiple_of(2) {
        return Err(format!("hex string has an odd number of digits ({})", s.len()));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(s.get(i..i + 2).unwrap_or("zz"), 16)
                .map_err(|_| format!("`{}` is not hexadecimal", &s[i..(i + 2).min(s.len())]))
        })
        .collect()
}

pub fn hex_encode(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Decodes a result buffer into JSON elements.
pub fn decode_all(ty: ElemType, bytes: &[u8]) -> Vec<Value> {
    bytes.chunks_exact(ty.size()).map(|c| ty.decode(c)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_notation() {
        assert_eq!(ElemType::F32.encode(&json!(1.5)).unwrap(), 1.5f32.to_le_bytes());
        assert_eq!(
            ElemType::F32.encode(&json!("0x7fc00001")).unwrap(),
            0x7fc0_0001u32.to_le_bytes()
        );
        assert_eq!(ElemType::F64.encode(&json!("-inf")).unwrap(), f64::NEG_INFINITY.to_le_bytes());
        assert!(f32::from_le_bytes(
            ElemType::F32.encode(&json!("nan")).unwrap().try_into().unwrap()
        )
        .is_nan());
        assert_eq!(ElemType::S8.encode(&json!(-128)).unwrap(), vec![0x80]);
        assert!(ElemType::U8.encode(&json!(256)).is_err());
        assert!(ElemType::U32.encode(&json!(-1)).is_err());
        assert!(ElemType::U32.encode(&json!(1.5)).is_err());
        assert_eq!(ElemType::U64.encode(&json!(u64::MAX)).unwrap(), u64::MAX.to_le_bytes());
        assert_eq!(ElemType::F16.encode(&json!(1.0)).unwrap(), 0x3c00u16.to_le_bytes());
        assert_eq!(ElemType::Bf16.encode(&json!(1.0)).unwrap(), 0x3f80u16.to_le_bytes());
        assert_eq!(
            ElemType::U16.encode(&json!("0x10000")).unwrap_err(),
            "bit pattern `0x10000` does not fit in 16 bits"
        );
    }

    #[test]
    fn decoding_round_trips() {
        for ty in [ElemType::F32, ElemType::F64, ElemType::S32, ElemType::U64, ElemType::F16] {
            for v in [json!(0), json!(1), json!(3)] {
                let b = ty.encode(&v).unwrap();
                assert_eq!(ty.encode(&ty.decode(&b)).unwrap(), b);
            }
        }
        assert_eq!(ElemType::F32.decode(&f32::INFINITY.to_le_bytes()), json!("inf"));
    }

    #[test]
    fn spec_with_every_arg_form_and_unknown_keys() {
        let s = parse(
            r#"{"ptx": "k.ptx", "comment": "ignored", "grid": [2, 3], "block": 64,
               "args": [{"buffer": "f32", "data": [1, "nan", "0x3f800000"], "note": 1},
                        {"buffer": "u32", "len": 4}, {"buffer": "u8", "hex": "0a0b"},
                        {"scalar": "s32", "value": -2}, {"bytes": "0102"},
                        {"buffer": "f32", "len": 2, "uninitialized": true}]}"#,
            Path::new("dir"),
        )
        .unwrap();
        assert_eq!(s.ptx, [Path::new("dir").join("k.ptx")]);
        assert_eq!(s.grid, [2, 3, 1]);
        let linked =
            parse(r#"{"ptx": ["a.ptx", "b.ptx"], "grid": 1, "block": 1}"#, Path::new("d")).unwrap();
        assert_eq!(linked.ptx, [Path::new("d").join("a.ptx"), Path::new("d").join("b.ptx")]);
        assert!(parse(r#"{"ptx": [], "grid": 1, "block": 1}"#, Path::new("d")).is_err());
        assert_eq!(s.block, [64, 1, 1]);
        assert_eq!(s.args.len(), 6);
        assert_eq!(s.args[5], SpecArg::Uninitialized { ty: ElemType::F32, len: 2 });
        assert_eq!(s.args[1], SpecArg::Buffer { ty: ElemType::U32, bytes: vec![0; 16] });
        assert_eq!(s.args[2], SpecArg::Buffer { ty: ElemType::U8, bytes: vec![10, 11] });
        assert_eq!(s.args[3], SpecArg::Value((-2i32).to_le_bytes().to_vec()));
        assert_eq!(s.args[4], SpecArg::Value(vec![1, 2]));
    }

    #[test]
    fn malformed_specs_are_errors() {
        for bad in [
            "[]",
            r#"{"grid": [1], "block": [1]}"#,
            r#"{"ptx": "a", "grid": [0], "block": [1]}"#,
            r#"{"ptx": "a", "grid": [1,1,1,1], "block": [1]}"#,
            r#"{"ptx": "a", "grid": [1], "block": [1], "args": [{"buffer": "f33", "len": 1}]}"#,
            r#"{"ptx": "a", "grid": [1], "block": [1], "args": [{"buffer": "f32", "len": 1, "data": []}]}"#,
            r#"{"ptx": "a", "grid": [1], "block": [1], "args": [{"bytes": "0"}]}"#,
            r#"{"ptx": "a", "grid": [1], "block": [1], "args": [{"buffer": "f32", "data": [1], "uninitialized": true}]}"#,
        ] {
            assert!(parse(bad, Path::new(".")).is_err(), "{bad}");
        }
    }

    #[test]
    fn short_forms() {
        assert_eq!(
            parse_short_arg("buf:f32:1,2").unwrap(),
            SpecArg::Buffer {
                ty: ElemType::F32,
                bytes: [1f32.to_le_bytes(), 2f32.to_le_bytes()].concat()
            }
        );
        assert_eq!(
            parse_short_arg("buf:u32:zeros:3").unwrap(),
            SpecArg::Buffer { ty: ElemType::U32, bytes: vec![0; 12] }
        );
        assert_eq!(
            parse_short_arg("buf:u8:hex:0a0b").unwrap(),
            SpecArg::Buffer { ty: ElemType::U8, bytes: vec![10, 11] }
        );
        assert_eq!(
            parse_short_arg("buf:f32:uninit:5").unwrap(),
            SpecArg::Uninitialized { ty: ElemType::F32, len: 5 }
        );
        assert!(parse_short_arg("buf:f32:uninit:x").is_err());
        assert_eq!(parse_short_arg("u32:7").unwrap(), SpecArg::Value(7u32.to_le_bytes().to_vec()));
        assert_eq!(
            parse_short_arg("f32:1.5").unwrap(),
            SpecArg::Value(1.5f32.to_le_bytes().to_vec())
        );
        assert_eq!(parse_short_arg("bytes:0a0b").unwrap(), SpecArg::Value(vec![10, 11]));
        assert!(parse_short_arg("q32:1").is_err());
        assert!(parse_short_arg("u32").is_err());
        assert_eq!(parse_dims("4,2").unwrap(), [4, 2, 1]);
        assert!(parse_dims("0").is_err());
    }
}
