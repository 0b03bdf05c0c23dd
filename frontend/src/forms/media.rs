//! The implemented forms of the media families: the half-precision formats and directed
//! roundings of the arithmetic instructions (PTX ISA 9.2 §9.7.4, §9.7.3), the video
//! instructions (§9.7.16), textures and surfaces (§9.7.10-11) and the matrix
//! instructions (§9.7.14), as rows of [`crate::forms`]'s table with the checks of their
//! own ([`Check`]) and the selections of their own ([`When`]).
//!
//! These rows are tried before the others of an opcode: they select the narrow-format
//! and directed-rounding forms of arithmetic opcodes whose other forms have rows there.

use super::video::{VideoOperands, SCALES, SECONDARY};
use super::{Check::*, Form, When as Select};
use crate::ast::{Instruction, ScalarType, StateSpace};
use crate::decode::{BoolOp, Direction, Modifiers};
use crate::diagnostic::Diagnostic;
use crate::instructions::Opcode::{self, *};
use crate::modifier::{
    Boundary, Clamp, Component, Convergence, ConvertRounding, FloatOption, Format, Fragment,
    Geometry, Layout, Lod, Modifier, Query, Reduction, Shape, SurfaceAccess, Transpose, VideoScale,
    WmmaOp,
};
use crate::span::Spanned;
use ScalarType::*;

/// A constraint of a media form, beyond the generic ones of [`super::Check`].
#[derive(Debug)]
pub enum Check {
    /// Exactly this many types, each one of the set (`vadd.s32.u32.s32`).
    Types(usize, &'static [ScalarType]),
    /// Type `k` (from 0) is one of the set; `what` names the operand it types.
    TypeAt(usize, &'static [ScalarType], &'static str),
    /// At most one of these modifiers (`vmad.shr7` or `.shr15`, one boundary mode).
    AtMostOneOf(&'static [Modifier]),
    /// No `.sat` with this modifier (`vadd2.add`).
    NoSatWith(Modifier),
    /// `.sat` only when the last type is one of these (`add.rz.sat.f32`).
    SatWith(&'static [ScalarType]),
    /// No integer rounding (`.rni`).
    NoIntegerRounding,
    /// A vector of this many elements (`tex.v4`).
    Vector(u32),
    /// Each of these modifiers (`movmatrix.m8n8.trans`).
    Needs(&'static [Modifier]),
    /// None of these modifiers, which other opcodes' forms take (`suld.p`), and what to
    /// write instead.
    Without(&'static [Modifier], &'static str),
    /// No state space other than these (`ldmatrix.shared`).
    Spaces(&'static [StateSpace]),
    /// The layouts in this order (`mma.row.col`).
    Layouts(&'static [Layout]),
    /// Exactly one operation: one of these modifiers or a predicate combine (`sured.add`,
    /// `sured.and`).
    Operation(&'static [Modifier]),
    /// The selectors and negations of a video instruction's operands ([`VideoOperands`]).
    Video(VideoOperands),
    /// The two forms of `cvt` with `.ue8m0x2` (§9.7.9.21): `cvt.rn.bf16x2.ue8m0x2 d, a`,
    /// and `cvt.{rz,rp}{.satfinite}.ue8m0x2.f32 d, a, b` or `….ue8m0x2.bf16x2 d, a`
    /// ([`to_ue8m0`] tells them apart); with `.rs` left to semantic analysis, which
    /// refuses stochastic rounding.
    Ue8m0,
    /// None of these modifiers, which name forms that are not implemented; the note
    /// says why (`cvt` with the x4 formats).
    Unsupported(&'static [Modifier], &'static str),
    /// No `.sat`: the narrow formats saturate with `.satfinite` (`cvt.satfinite.e4m3x2`).
    NoSatButSatfinite,
    /// `mma`'s shape and types: a combination ptxvk implements (`super::mma`).
    MmaShapeTypes,
    /// `wmma`'s shape and types: a form ptxvk implements (`super::mma`).
    WmmaShapeTypes,
    /// A texture or surface instruction's geometry and operands (`super::texture`).
    Texture,
    /// `ldmatrix`'s and `stmatrix`'s shape and registers (`super::mma`).
    MatrixRows,
    /// No stochastic rounding (`cvt.rs`, [`STOCHASTIC`]).
    Stochastic,
    /// A conversion from `.f32` or `.f64` to a narrow float takes a source per lane
    /// (`cvt.rn.f16x2.f32 d, a, b`).
    NarrowSources,
}

/// Whether a `cvt` with `.ue8m0x2` converts to it: the format comes before the type in
/// the source (`cvt.rz.ue8m0x2.f32`), not after it (`cvt.rn.bf16x2.ue8m0x2`).
pub fn to_ue8m0(details: &[Spanned<Modifier>], types: &[Spanned<ScalarType>]) -> bool {
    let ue8m0 = details.iter().find(|d| d.value == UE8M0X2).map(|d| d.span.start);
    ue8m0 < types.first().map(|t| t.span.start)
}

/// Which instructions of a media row's opcodes it describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// One type, one of these (`add.f16`).
    TypeIn(&'static [ScalarType]),
    /// The first type is this one (`tex.v2.f16x2.f32`).
    FirstType(ScalarType),
    /// A directed rounding (`.rz`, `.rm`, `.rp`), not an integer one.
    Directed,
}

impl When {
    /// Whether `m` is an instruction this selects.
    pub fn holds(self, m: &Modifiers) -> bool {
        match self {
            When::TypeIn(set) => matches!(m.types.as_slice(), [t] if set.contains(&t.value)),
            When::FirstType(t) => m.types.first().is_some_and(|f| f.value == t),
            When::Directed => m
                .rounding
                .as_ref()
                .is_some_and(|r| !r.value.integer && r.value.direction != Direction::Nearest),
        }
    }
}

const fn row(ops: &'static [Opcode], checks: &'static [super::Check]) -> Form {
    Form { ops, when: Select::Always, name: "", checks }
}

const fn when(ops: &'static [Opcode], w: When, checks: &'static [super::Check]) -> Form {
    Form { ops, when: Select::Media(w), name: "", checks }
}

const fn has(ops: &'static [Opcode], d: Modifier, checks: &'static [super::Check]) -> Form {
    Form { ops, when: Select::Has(d), name: "", checks }
}

use super::Check::Media as M;
use Check::*;
// `forms` has checks of these names for the core arithmetic; here they are this file's.
use Check::{Needs, SatWith};

const U32S32: &[ScalarType] = &[U32, S32];
const SCALAR: VideoOperands = VideoOperands::Scalar;
const SIMD2: VideoOperands = VideoOperands::Simd(2);
const SIMD4: VideoOperands = VideoOperands::Simd(4);
const ADD: Modifier = Modifier::Reduction(Reduction::Add);
const MIN: Modifier = Modifier::Reduction(Reduction::Min);
const MAX: Modifier = Modifier::Reduction(Reduction::Max);
const CLAMP_WRAP: &[Modifier] = &[Modifier::Clamp(Clamp::Clamp), Modifier::Clamp(Clamp::Wrap)];
const SHIFT_MODES: &[Modifier] =
    &[ADD, MIN, MAX, Modifier::Clamp(Clamp::Clamp), Modifier::Clamp(Clamp::Wrap)];
const SHR: &[Modifier] =
    &[Modifier::VideoScale(VideoScale::Shr7), Modifier::VideoScale(VideoScale::Shr15)];

const F16S: &[ScalarType] = &[F16, F16x2];
const BF16S: &[ScalarType] = &[Bf16, Bf16x2];
const RELU: Modifier = Modifier::FloatOption(FloatOption::Relu);
const NAN: Modifier = Modifier::FloatOption(FloatOption::NaN);

const GEOMETRIES: &[Modifier] = &[
    Modifier::Geometry(Geometry::D1),
    Modifier::Geometry(Geometry::D2),
    Modifier::Geometry(Geometry::D3),
    Modifier::Geometry(Geometry::A1d),
    Modifier::Geometry(Geometry::A2d),
    Modifier::Geometry(Geometry::Cube),
    Modifier::Geometry(Geometry::Acube),
    Modifier::Geometry(Geometry::D2ms),
    Modifier::Geometry(Geometry::A2dms),
];
/// `tld4`'s geometries (§9.7.10.4), then its components.
const TLD4: &[Modifier] = &[
    Modifier::Geometry(Geometry::D2),
    Modifier::Geometry(Geometry::A2d),
    Modifier::Geometry(Geometry::Cube),
    Modifier::Geometry(Geometry::Acube),
    Modifier::Component(Component::R),
    Modifier::Component(Component::G),
    Modifier::Component(Component::B),
    Modifier::Component(Component::A),
];
/// `txq.level` and the queries it takes (§9.7.10.5).
const LEVEL_QUERIES: &[Modifier] = &[
    Modifier::Query(Query::Level),
    Modifier::Query(Query::Width),
    Modifier::Query(Query::Height),
    Modifier::Query(Query::Depth),
];
const LODS: &[Modifier] =
    &[Modifier::Lod(Lod::Level), Modifier::Lod(Lod::Grad), Modifier::Lod(Lod::Base)];
const ACCESS: &[Modifier] =
    &[Modifier::SurfaceAccess(SurfaceAccess::B), Modifier::SurfaceAccess(SurfaceAccess::P)];
const BOUNDARIES: &[Modifier] = &[
    Modifier::Boundary(Boundary::Trap),
    Modifier::Boundary(Boundary::Clamp),
    Modifier::Boundary(Boundary::Zero),
];
const P: Modifier = Modifier::SurfaceAccess(SurfaceAccess::P);

const SYNC: Modifier = Modifier::Convergence(Convergence::Sync);
const ALIGNED: Modifier = Modifier::Convergence(Convergence::Aligned);
const TRANS: Modifier = Modifier::Transpose(Transpose::Trans);
const M8N8: Modifier = Modifier::Shape(Shape { m: 8, n: 8, k: None });
const SATFINITE: Modifier = Modifier::FloatOption(FloatOption::Satfinite);
const UE8M0X2: Modifier = Modifier::Format(Format::Ue8m0x2);
const RS: Modifier = Modifier::ConvertRounding(ConvertRounding::Rs);
const WMMA_OPS: &[Modifier] = &[
    Modifier::WmmaOp(WmmaOp::Load),
    Modifier::WmmaOp(WmmaOp::Store),
    Modifier::WmmaOp(WmmaOp::Mma),
];
const ROW_COL: &[Modifier] = &[Modifier::Layout(Layout::Row), Modifier::Layout(Layout::Col)];
const SHARED: &[StateSpace] = &[StateSpace::Shared];
const GLOBAL_SHARED: &[StateSpace] = &[StateSpace::Global, StateSpace::Shared];

/// The media rows, tried before [`super::FORMS`].
pub static FORMS: &[Form] = &[
    // §9.7.4.1-4, §9.7.4.10-11: half-precision arithmetic, which `add`, `sub`, `mul` and
    // `fma` round (`fma` with a rounding always), `fma` with `.relu`, `min`/`max` with
    // `.NaN`; `.bf16` takes no `.ftz` or `.sat`, nor `.sat` with `.relu`.
    when(&[Add, Sub, Mul], When::TypeIn(F16S), &[Details(&[]), M(NoIntegerRounding), NoPart]),
    when(
        &[Add, Sub, Mul],
        When::TypeIn(BF16S),
        &[Details(&[]), NoFtz, NoSat, M(NoIntegerRounding), NoPart],
    ),
    when(
        &[Fma],
        When::TypeIn(F16S),
        &[Details(&[RELU]), M(NoSatWith(RELU)), M(NoIntegerRounding), Rounding, NoPart],
    ),
    when(
        &[Fma],
        When::TypeIn(BF16S),
        &[Details(&[RELU]), NoFtz, NoSat, M(NoIntegerRounding), Rounding, NoPart],
    ),
    when(&[Neg, Abs], When::TypeIn(F16S), &[Details(&[])]),
    when(&[Neg, Abs], When::TypeIn(BF16S), &[Details(&[]), NoFtz]),
    when(&[Min, Max], When::TypeIn(F16S), &[Details(&[NAN]), Operands(3)]),
    when(&[Min, Max], When::TypeIn(BF16S), &[Details(&[NAN]), NoFtz, Operands(3)]),
    // §9.7.4.10: `ex2.approx.f16{x2}` takes no `.ftz`, `ex2.approx.ftz.bf16{x2}` must have
    // it (subnormal inputs and results flushed; ptxas refuses either other spelling).
    when(&[Ex2], When::TypeIn(F16S), &[Details(super::APPROX), OneOf(super::APPROX), NoFtz]),
    when(&[Ex2], When::TypeIn(BF16S), &[Details(super::APPROX), OneOf(super::APPROX), Ftz]),
    // §9.7.3.1-5: `add`, `sub`, `mul`, `fma`, `mad` with `.rz`, `.rm` or `.rp` on `.f32`
    // or `.f64`; `.ftz` and `.sat` on `.f32` only.
    when(
        &[Add, Sub, Mul, Fma, Mad],
        When::Directed,
        &[Details(&[]), Type(super::F32F64), FtzWith(&[F32]), M(SatWith(&[F32])), NoPart],
    ),
    // §9.7.16.1: the scalar video instructions, a secondary operation at most.
    row(
        &[Vadd, Vsub, Vabsdiff, Vmin, Vmax],
        &[M(Types(3, U32S32)), Details(SECONDARY), M(AtMostOneOf(SECONDARY)), M(Video(SCALAR))],
    ),
    row(
        &[Vshl, Vshr],
        &[
            M(Types(3, U32S32)),
            M(TypeAt(2, &[U32], "the shift amount")),
            OneOf(CLAMP_WRAP),
            Details(SHIFT_MODES),
            M(AtMostOneOf(SECONDARY)),
            M(Video(SCALAR)),
        ],
    ),
    row(
        &[Vset],
        &[
            M(Types(2, U32S32)),
            Comparison,
            Details(SECONDARY),
            M(AtMostOneOf(SECONDARY)),
            M(Video(SCALAR)),
        ],
    ),
    row(
        &[Vmad],
        &[M(Types(3, U32S32)), Details(SCALES), M(AtMostOneOf(SHR)), M(Video(VideoOperands::Mad))],
    ),
    // §9.7.16.2: the SIMD video instructions accumulate (`.add`) or saturate.
    row(
        &[Vadd2, Vsub2, Vavrg2, Vabsdiff2, Vmin2, Vmax2],
        &[M(Types(3, U32S32)), Details(&[ADD]), M(NoSatWith(ADD)), M(Video(SIMD2))],
    ),
    row(
        &[Vadd4, Vsub4, Vavrg4, Vabsdiff4, Vmin4, Vmax4],
        &[M(Types(3, U32S32)), Details(&[ADD]), M(NoSatWith(ADD)), M(Video(SIMD4))],
    ),
    row(&[Vset2], &[M(Types(2, U32S32)), Comparison, Details(&[ADD]), M(Video(SIMD2))]),
    row(&[Vset4], &[M(Types(2, U32S32)), Comparison, Details(&[ADD]), M(Video(SIMD4))]),
    // §9.7.9.21: `cvt.rn.bf16x2.ue8m0x2`, `cvt.{rz,rp}{.satfinite}.ue8m0x2.{f32,bf16x2}`
    // (`.rs` refused as not supported).
    has(
        &[Cvt],
        UE8M0X2,
        &[Details(&[UE8M0X2, SATFINITE, RS]), NoFtz, NoSat, M(Ue8m0), M(Stochastic)],
    ),
    // §9.7.9.21: `cvt` with a narrow format on either side; with `.rs`, refused as not
    // supported.
    Form {
        ops: &[Cvt],
        when: Select::If(narrow_cvt),
        name: "",
        checks: &[
            M(Unsupported(UNIMPLEMENTED_FORMATS, STOCHASTIC)),
            Details(NARROW_CVT),
            M(NoSatButSatfinite),
            M(NarrowSources),
        ],
    },
    has(&[Cvt], RS, &[M(Stochastic)]),
    // §9.7.10.3: `tex.geom.v4.dtype.ctype`, `.v2` for `.f16x2`.
    when(
        &[Tex],
        When::FirstType(F16x2),
        &[
            OneOf(GEOMETRIES),
            M(AtMostOneOf(LODS)),
            TwoTypes(TEX_RESULTS, &[F32, S32]),
            M(Vector(2)),
            M(Texture),
        ],
    ),
    row(
        &[Tex],
        &[
            OneOf(GEOMETRIES),
            M(AtMostOneOf(LODS)),
            TwoTypes(TEX_RESULTS, &[F32, S32]),
            M(Vector(4)),
            M(Texture),
        ],
    ),
    // §9.7.10.4: `tld4.comp.2d.v4.dtype.f32`.
    row(
        &[Tld4],
        &[
            Details(TLD4),
            OneOf(TLD4.split_at(4).0),
            OneOf(TLD4.split_at(4).1),
            TwoTypes(&[F32, S32, U32], &[F32]),
            M(Vector(4)),
            M(Texture),
        ],
    ),
    // §9.7.10.5: `txq.level.{width,height,depth}.b32 d, [a], lod`; the other queries
    // `txq.query.b32 d, [a]`, one query each.
    has(
        &[Txq],
        LEVEL_QUERIES[0],
        &[Details(LEVEL_QUERIES), OneOf(LEVEL_QUERIES.split_at(1).1), Operands(3), M(Texture)],
    ),
    row(&[Txq], &[AtMostOne("query"), Operands(2), M(Texture)]),
    row(&[Suq], &[M(Texture)]),
    // §9.7.11.2-4: `sust.p` stores `.b32`; `sured.p` is `.b32`, or `.b64` with `.min`
    // and `.max`.
    Form {
        name: "sust.p",
        ..has(
            &[Sust],
            P,
            &[OneOf(GEOMETRIES), M(AtMostOneOf(BOUNDARIES)), Type(&[B32]), M(Texture)],
        )
    },
    Form {
        name: "sured.p",
        ..has(
            &[Sured],
            P,
            &[
                OneOf(GEOMETRIES),
                M(AtMostOneOf(BOUNDARIES)),
                M(Operation(SECONDARY)),
                Type(&[B32, B64]),
                M(Texture),
            ],
        )
    },
    row(
        &[Suld],
        &[
            M(Without(&[P], "surfaces load with `suld.b`")),
            OneOf(ACCESS.split_at(1).0),
            OneOf(GEOMETRIES),
            M(AtMostOneOf(BOUNDARIES)),
            M(Texture),
        ],
    ),
    row(&[Sust], &[OneOf(ACCESS), OneOf(GEOMETRIES), M(AtMostOneOf(BOUNDARIES)), M(Texture)]),
    row(
        &[Sured],
        &[
            OneOf(ACCESS),
            OneOf(GEOMETRIES),
            M(AtMostOneOf(BOUNDARIES)),
            M(Operation(SECONDARY)),
            Combines(&[BoolOp::And, BoolOp::Or]),
            M(Texture),
        ],
    ),
    // §9.7.14.5.14: `mma.sync.aligned.shape.row.col`, `.satfinite` on the integer forms.
    has(
        &[Mma],
        SATFINITE,
        &[
            M(TypeAt(0, &[S32], "`.satfinite`: the result")),
            M(Layouts(&[Layout::Row, Layout::Col])),
            M(MmaShapeTypes),
        ],
    ),
    row(&[Mma], &[M(Layouts(&[Layout::Row, Layout::Col])), M(MmaShapeTypes)]),
    // §9.7.14.5.15-17: `ldmatrix`/`stmatrix.sync.aligned.m8n8.num{.trans}{.shared}.b16`,
    // `movmatrix.sync.aligned.m8n8.trans.b16`.
    has(
        &[Ldmatrix, Stmatrix],
        M8N8,
        &[OneOf(COUNTS), M(Spaces(SHARED)), Type(&[B16]), M(MatrixRows)],
    ),
    row(&[Ldmatrix, Stmatrix], &[OneOf(COUNTS), M(Spaces(SHARED)), M(MatrixRows)]),
    row(
        &[Movmatrix],
        &[M(Needs(&[TRANS, M8N8])), Details(&[SYNC, ALIGNED, TRANS, M8N8]), Type(&[B16])],
    ),
    // §9.7.14.4: `wmma.load.{a,b,c}`, `wmma.store.d`, one layout, `.global` or `.shared`.
    has(&[Wmma], WMMA_OPS[2], &[OneOf(WMMA_OPS), M(WmmaShapeTypes)]),
    has(
        &[Wmma],
        WMMA_OPS[1],
        &[
            OneOf(WMMA_OPS),
            OneOf(&[Modifier::Fragment(Fragment::D)]),
            OneOf(ROW_COL),
            M(Spaces(GLOBAL_SHARED)),
            M(WmmaShapeTypes),
        ],
    ),
    row(
        &[Wmma],
        &[
            OneOf(WMMA_OPS),
            OneOf(FRAGMENTS),
            OneOf(ROW_COL),
            M(Spaces(GLOBAL_SHARED)),
            M(WmmaShapeTypes),
        ],
    ),
];

/// A `cvt` with a half or narrow float type (`sema::formats`), but `.ue8m0x2` (a row of
/// its own) and `.rs`.
fn narrow_cvt(m: &Modifiers) -> bool {
    super::narrow_format_cvt(m) && !m.has(RS)
}

/// The modifiers of a narrow-format `cvt`: the FP8, FP6 and FP4 pairs, `.rna`, `.relu`
/// and `.satfinite`.
const NARROW_CVT: &[Modifier] = &[
    Modifier::Format(Format::E4m3x2),
    Modifier::Format(Format::E5m2x2),
    Modifier::Format(Format::E2m3x2),
    Modifier::Format(Format::E3m2x2),
    Modifier::Format(Format::E2m1x2),
    Modifier::ConvertRounding(ConvertRounding::Rna),
    RELU,
    SATFINITE,
];

/// Narrow float forms that are not implemented: the x4 forms, which exist only with
/// stochastic rounding (`.rs`), and `.s2f6x2`.
const UNIMPLEMENTED_FORMATS: &[Modifier] = &[
    Modifier::Format(Format::E4m3x4),
    Modifier::Format(Format::E5m2x4),
    Modifier::Format(Format::E2m3x4),
    Modifier::Format(Format::E3m2x4),
    Modifier::Format(Format::E2m1x4),
    Modifier::Format(Format::S2f6x2),
];

/// Why stochastic rounding (`.rs`) and the x4 forms that need it are not implemented.
pub const STOCHASTIC: &str = "the PTX ISA shows how `.rs` applies the random bits `rbits` only \
     in a figure, not in its text, so results could not be made bit-exact";

const TEX_RESULTS: &[ScalarType] = &[F32, F16x2, S32, U32];
const COUNTS: &[Modifier] = &[Modifier::Count(1), Modifier::Count(2), Modifier::Count(4)];
const FRAGMENTS: &[Modifier] = &[
    Modifier::Fragment(Fragment::A),
    Modifier::Fragment(Fragment::B),
    Modifier::Fragment(Fragment::C),
];

/// Holds `i`, with its decoded modifiers `m`, against one media check of its row.
pub fn check(c: &Check, i: &Instruction, m: &Modifiers, name: &str) -> Result<(), Diagnostic> {
    let op = m.opcode;
    let fail = |span, msg: String| Err(Diagnostic::error(span, msg));
    match c {
        Types(n, set) => {
            if m.types.len() != *n {
                let example = if *n == 2 { ".u32.s32" } else { ".s32.u32.s32" };
                let msg = format!("`{op}` needs {n} types, such as `{op}{example}`");
                return fail(i.opcode.span, msg);
            }
            if let Some(t) = m.types.iter().find(|t| !set.contains(&t.value)) {
                return fail(t.span, format!("`{op}` takes {} types", super::types(set)));
            }
        }
        TypeAt(k, set, what) => {
            if let Some(t) = m.types.get(*k).filter(|t| !set.contains(&t.value)) {
                return fail(t.span, format!("{what} of `{name}` is {}", super::types(set)));
            }
        }
        AtMostOneOf(set) => {
            let mut found = m.details.iter().filter(|d| set.contains(&d.value));
            if let (Some(first), Some(second)) = (found.next(), found.next()) {
                let msg = format!("`{}` conflicts with `{}` on `{op}`", second.value, first.value);
                return fail(second.span, msg);
            }
        }
        NoSatWith(d) => {
            if m.sat && m.has(*d) {
                return fail(i.span, format!("`{name}` takes no `.sat` with `{d}`"));
            }
        }
        SatWith(set) => {
            if m.sat && !m.types.last().is_some_and(|t| set.contains(&t.value)) {
                let msg = format!("`{name}.sat` takes {} as its last type", super::types(set));
                return fail(i.span, msg);
            }
        }
        NoIntegerRounding => {
            if let Some(r) = m.rounding.as_ref().filter(|r| r.value.integer) {
                return fail(r.span, format!("`{name}` takes no integer rounding"));
            }
        }
        Vector(n) => {
            if m.vector != Some(*n) {
                return fail(i.span, format!("`{name}` here returns a `.v{n}` vector"));
            }
        }
        Needs(set) => {
            if let Some(d) = set.iter().find(|d| !m.has(**d)) {
                return fail(i.span, format!("`{name}` needs `{d}`"));
            }
        }
        Without(set, instead) => {
            if let Some(d) = m.details.iter().find(|d| set.contains(&d.value)) {
                let msg = format!("`{op}{}` is not a PTX instruction: {instead}", d.value);
                return fail(d.span, msg);
            }
        }
        Spaces(set) => {
            if let Some(s) = m.space.as_ref().filter(|s| !set.contains(&s.value)) {
                let names: Vec<&str> = set.iter().map(|s| s.directive()).collect();
                let msg = format!("`{name}` takes `{}` addresses", names.join("` or `"));
                return fail(s.span, msg);
            }
        }
        Layouts(want) => {
            let layouts = m.details.iter().filter_map(|d| match d.value {
                Modifier::Layout(l) => Some(l),
                _ => None,
            });
            if !layouts.eq(want.iter().copied()) {
                let names: String = want.iter().map(|l| l.spelling()).collect();
                return fail(i.span, format!("this `{name}` needs `{names}`"));
            }
        }
        Operation(set) => {
            let count = m.details.iter().filter(|d| set.contains(&d.value)).count()
                + usize::from(m.combine.is_some());
            if count != 1 {
                return fail(i.span, format!("`{name}` names one operation (`.add`, `.min`, …)"));
            }
        }
        Video(form) => super::video::check(*form, i, m)?,
        Ue8m0 if !m.has(RS) => ue8m0(i, m)?,
        Ue8m0 => {}
        Unsupported(set, why) => {
            if let Some(d) = m.details.iter().find(|d| set.contains(&d.value)) {
                let msg = format!("`{op}` with `{}` is not supported yet", d.value);
                return Err(Diagnostic::error(d.span, msg).with_note(why.to_string()));
            }
        }
        NoSatButSatfinite => {
            if m.sat {
                return fail(i.span, format!("narrow-format `{name}` saturates with `.satfinite`"));
            }
        }
        MmaShapeTypes => super::mma::check(i, m)?,
        WmmaShapeTypes => super::mma::check_wmma(i, m)?,
        Texture => super::texture::check(i, m)?,
        MatrixRows => super::mma::check_rows(i, m)?,
        Stochastic => {
            if let Some(d) = m.details.iter().find(|d| d.value == RS) {
                let msg = "`cvt.rs` (stochastic rounding) is not supported yet";
                return Err(Diagnostic::error(d.span, msg).with_note(STOCHASTIC.to_string()));
            }
        }
        NarrowSources => narrow_sources(i, m)?,
    }
    Ok(())
}

/// [`Check::NarrowSources`].
fn narrow_sources(i: &Instruction, m: &Modifiers) -> Result<(), Diagnostic> {
    use Format::*;
    // The types in source order: where, the lanes of a narrow float, whether f32/f64.
    let pairs = m.details.iter().filter_map(|d| match d.value {
        Modifier::Format(E4m3x2 | E5m2x2 | E2m3x2 | E3m2x2 | E2m1x2) => {
            Some((d.span.start, Some(2), false))
        }
        _ => None,
    });
    let scalars = m.types.iter().map(|t| {
        let lanes = match t.value {
            F16 | Bf16 | Tf32 => Some(1),
            F16x2 | Bf16x2 => Some(2),
            _ => None,
        };
        (t.span.start, lanes, matches!(t.value, F32 | F64))
    });
    let mut types: Vec<(u32, Option<usize>, bool)> = pairs.chain(scalars).collect();
    types.sort_by_key(|t| t.0);
    if let [(_, Some(lanes), _), (_, _, true)] = types.as_slice() {
        if i.operands.len().saturating_sub(1) != *lanes {
            let msg = format!("this `cvt` takes {lanes} source(s)");
            return Err(Diagnostic::error(i.span, msg));
        }
    }
    Ok(())
}

/// [`Check::Ue8m0`].
fn ue8m0(i: &Instruction, m: &Modifiers) -> Result<(), Diagnostic> {
    let fail = |msg: &str| Err(Diagnostic::error(i.span, msg.to_string()));
    let sources = i.operands.len().wrapping_sub(1);
    if !(1..=2).contains(&sources) {
        return fail("`cvt` takes a destination and one or two sources");
    }
    let rounding = m.rounding.as_ref().filter(|r| !r.value.integer).map(|r| r.value.direction);
    let types: Vec<ScalarType> = m.types.iter().map(|t| t.value).collect();
    if !to_ue8m0(&m.details, &m.types) {
        if types != [Bf16x2] || rounding != Some(Direction::Nearest) || m.has(SATFINITE) {
            return fail("`.ue8m0x2` converts to `.bf16x2` only, as `cvt.rn.bf16x2.ue8m0x2`");
        }
        if sources != 1 {
            return fail("this `cvt` takes 1 source");
        }
        return Ok(());
    }
    if !matches!(rounding, Some(Direction::Zero | Direction::Up)) {
        return fail("conversions to `.ue8m0x2` need `.rz` or `.rp`");
    }
    match (types.as_slice(), sources) {
        ([F32], 2) | ([Bf16x2], 1) => Ok(()),
        _ => fail("`.ue8m0x2` converts from two `.f32` sources or one `.bf16x2`"),
    }
}

#[cfg(test)]
mod tests {
    /// The diagnostic [`super::super::check`] gives `line`, or `None` when it passes.
    fn checked(line: &str) -> Option<String> {
        let i = crate::decode::test_instruction(line).expect("parses");
        let m = crate::decode::decode(&i).expect("decodes").expect("a PTX instruction");
        super::super::check(&i, &m).err().map(|d| d.message)
    }

    #[track_caller]
    fn refused(line: &str, message: &str) {
        assert_eq!(checked(line).as_deref(), Some(message), "{line}");
    }

    #[test]
    fn video_forms() {
        assert_eq!(checked("vadd.s32.u32.s32.sat %r1.h1, %r2.b3, %r3.h0, %r4;"), None);
        assert_eq!(checked("vadd2.u32.u32.u32.add %r1.h1, %r2.h32, %r3.h01, %r4;"), None);
        assert_eq!(checked("vmad.s32.s32.s32.shr7 %r1, -%r2.b1, %r3, %r4;"), None);
        refused("vadd.u32.u32.u32.add %r1, %r2, %r3, %r4.h0;", "`c` of `vadd` takes no selector");
        refused(
            "vadd.u32.u32.u32.add %r1.h0, %r2, %r3, %r4;",
            "a destination selector merges into `c` and excludes `.add/.min/.max`",
        );
        refused(
            "vadd.u32.u32.u32.min %r1, %r2, %r3;",
            "`vadd` with `.add/.min/.max` or a destination selector takes `c`",
        );
        refused("vshl.u32.u32.s32.clamp %r1, %r2, %r3;", "the shift amount of `vshl` is `.u32`");
        refused("vshl.u32.u32.u32 %r1, %r2, %r3;", "`vshl` needs `.clamp` or `.wrap`");
        refused(
            "vmin.u32.u32.u32.add.max %r1, %r2, %r3, %r4;",
            "`.max` conflicts with `.add` on `vmin`",
        );
        refused(
            "vmad.s32.s32.s32.shr7.shr15 %r1, %r2, %r3, %r4;",
            "`.shr15` conflicts with `.shr7` on `vmad`",
        );
        refused("vmad.u32.u32.u32.po %r1, -%r2, %r3, %r4;", "`vmad.po` takes no negated operands");
        refused(
            "vmad.u32.u32.u32 %r1, -%r2, %r3, -%r4;",
            "`vmad` negates either `a*b` or `c`, not both",
        );
        refused(
            "vadd4.u32.u32.u32 %r1.b02, %r2, %r3, %r4;",
            "`.b02` is not a 4-lane destination mask",
        );
        refused(
            "vadd2.u32.u32.u32 %r1, %r2.h4, %r3, %r4;",
            "`.h4` is not a 2-lane selector: `.h` and 2 digits below 4",
        );
        refused("vadd2.u32.u32.u32 %r1, -%r2, %r3, %r4;", "only `vmad` takes negated operands");
        refused(
            "vadd2.sat.add.u32.u32.u32 %r1, %r2, %r3, %r4;",
            "`vadd2` takes no `.sat` with `.add`",
        );
        refused("vset.u32.u32 %r1, %r2, %r3;", "`vset` needs a comparison such as `.lt`");
    }

    #[test]
    fn texture_and_surface_forms() {
        assert_eq!(checked("tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [tr, {%f5, %f6}];"), None);
        assert_eq!(checked("tex.2d.v2.f16x2.f32 {%r1, %r2}, [tr, {%f5, %f6}];"), None);
        assert_eq!(checked("suld.b.2d.b32.trap %r1, [sr, {%r2, %r3}];"), None);
        refused(
            "tex.2d.v4.f16x2.f32 {%r1, %r2, %r3, %r4}, [tr, {%f5, %f6}];",
            "`tex` here returns a `.v2` vector",
        );
        refused(
            "tex.2d.level.grad.v4.f32.f32 {%f1, %f2, %f3, %f4}, [tr, {%f5, %f6}], %f7;",
            "`.grad` conflicts with `.level` on `tex`",
        );
        refused(
            "tld4.r.g.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [tr, {%f5, %f6}];",
            "`tld4` needs one of `.r`, `.g`, `.b`, `.a`",
        );
        refused(
            "tld4.r.2d.f32.f32 {%f1, %f2, %f3, %f4}, [tr, {%f5, %f6}];",
            "`tld4` here returns a `.v4` vector",
        );
        assert_eq!(checked("txq.level.depth.b32 %r1, [tr], %r2;"), None);
        assert_eq!(checked("txq.num_mipmap_levels.b32 %r1, [tr];"), None);
        refused("txq.level.width.b32 %r1, [tr];", "`txq` takes 3 operands here, found 2");
        refused("txq.width.b32 %r1, [tr], %r2;", "`txq` takes 2 operands here, found 3");
        refused(
            "txq.level.array_size.b32 %r1, [tr], %r2;",
            "unknown or unsupported modifier `.array_size` for `txq`",
        );
        refused("txq.width.height.b32 %r1, [tr];", "`txq` takes one query");
        refused(
            "sust.b.1d.b32.trap.zero [sr, {%r2}], %r1;",
            "`.zero` conflicts with `.trap` on `sust`",
        );
        refused(
            "sured.b.1d.add.min.b32 [sr, {%r2}], %r1;",
            "`sured` names one operation (`.add`, `.min`, …)",
        );
        refused("sust.p.1d.b64.trap [sr, {%r2}], %rd1;", "`sust.p` takes `.b32`");
        refused("sust.1d.b32.trap [sr, {%r2}], %r1;", "`sust` needs `.b` or `.p`");
        refused(
            "suld.p.1d.b32.trap %r1, [sr, {%r2}];",
            "`suld.p` is not a PTX instruction: surfaces load with `suld.b`",
        );
    }

    #[test]
    fn matrix_forms() {
        let operands =
            "{%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f5, %f6, %f7, %f8}";
        assert_eq!(
            checked(&format!("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {operands};")),
            None
        );
        refused(
            &format!("mma.sync.aligned.m16n8k16.col.row.f32.f16.f16.f32 {operands};"),
            "this `mma` needs `.row.col`",
        );
        // Shapes and types (`super::mma`): the pairs of A and B, `.b1` with `.popc`, and
        // the combinations sm_80–sm_90 have.
        let mma = |mods: &str| checked(&format!("mma.sync.aligned.{mods} {operands};"));
        assert_eq!(mma("m16n8k32.row.col.f32.e4m3.e5m2.f32"), None);
        assert_eq!(mma("m16n8k32.row.col.s32.s8.u8.s32"), None);
        assert_eq!(mma("m16n8k256.row.col.xor.popc.s32.b1.b1.s32"), None);
        let refusals = [
            (
                "m16n8k16.row.col.f32.f16.s8.f32",
                "`mma`: A type `.f16` and B type `.s8` do not go together",
            ),
            (
                "m16n8k32.row.col.s32.s8.s4.s32",
                "`mma`: A type `.s8` and B type `.s4` do not go together",
            ),
            (
                "m16n8k256.row.col.s32.b1.b1.s32",
                "`.b1` `mma` is `.and.popc` or `.xor.popc`, and only it takes them",
            ),
            (
                "m16n8k16.row.col.and.popc.f32.f16.f16.f32",
                "`.b1` `mma` is `.and.popc` or `.xor.popc`, and only it takes them",
            ),
            (
                "m16n8k16.row.col.u32.f16.f16.f32",
                "`mma.u32.f16.f16.f32`: the accumulators are not .f16, .f32, .f64 or .s32",
            ),
            ("m16n8k16.row.col.f32.f16.f16", "`mma` needs four types: `.dtype.atype.btype.ctype`"),
            ("m16n8.row.col.f32.f16.f16.f32", "unknown `mma` shape `.m16n8`"),
            ("row.col.f32.f16.f16.f32", "`mma` needs a shape such as `.m16n8k16`"),
            (
                "m16n8k32.row.col.f32.e2m1.e2m1.f32",
                "`mma` with `.e2m1.e2m1` inputs is not supported yet",
            ),
            (
                "m16n8k16.row.col.f32.bf16.bf16.f16",
                "`mma.m16n8k16` with `.f32.bf16.bf16.f16` is not supported yet",
            ),
            (
                "m8n8k4.row.col.f32.f16.f16.f32",
                "`mma.m8n8k4` with `.f32.f16.f16.f32` is not supported yet",
            ),
        ];
        for (mods, message) in refusals {
            assert_eq!(mma(mods).as_deref(), Some(message), "{mods}");
        }
        // `wmma`'s shapes and types (`super::mma::check_wmma`).
        let wmma = [
            ("wmma.load.a.sync.aligned.row.m16n16k16.f16 {%r1}, [%rd1];", None),
            ("wmma.load.c.sync.aligned.row.m16n16k8.f32 {%f1}, [%rd1];", None),
            (
                "wmma.load.a.sync.aligned.row.m8n8k32.s4 {%r1}, [%rd1];",
                Some("this `wmma` shape is not supported yet"),
            ),
            (
                "wmma.load.c.sync.aligned.row.m16n16k16.s8 {%r1}, [%rd1];",
                Some("`.s8` is not an accumulator type"),
            ),
            (
                "wmma.load.b.sync.aligned.row.m16n16k16.f32 {%f1}, [%rd1];",
                Some("`.f32` is not a WMMA input type"),
            ),
            (
                "wmma.load.a.sync.aligned.row.m16n16k16.tf32 {%r1}, [%rd1];",
                Some("this `wmma` shape and type is not supported yet"),
            ),
            (
                "wmma.mma.sync.aligned.row.col.m16n16k16.f32 {%f1}, {%r1}, {%r2}, {%f2};",
                Some("`wmma.mma` needs `.dtype.ctype` (f16) or `.dtype.atype.btype.ctype`"),
            ),
        ];
        for (line, message) in wmma {
            assert_eq!(checked(line).as_deref(), message, "{line}");
        }
        refused("wmma.store.a.sync.aligned.row.m16n16k16.f16 [%rd1], {%r1};", "`wmma` needs `.d`");
        refused(
            "wmma.load.d.sync.aligned.row.m16n16k16.f32 {%f1}, [%rd1];",
            "`wmma` needs one of `.a`, `.b`, `.c`",
        );
        refused("movmatrix.sync.aligned.m8n8.b16 %r1, %r2;", "`movmatrix` needs `.trans`");
        refused("movmatrix.sync.aligned.m8n8.trans.f32 %r1, %r2;", "`movmatrix` takes `.b16`");
        refused(
            "ldmatrix.sync.aligned.m8n8.x4.global.b16 {%r1, %r2, %r3, %r4}, [%rd1];",
            "`ldmatrix` takes `.shared` addresses",
        );
        refused(
            "ldmatrix.sync.aligned.m8n8.x1.shared.b16.b16 {%r1}, [%rd1];",
            "unexpected second type",
        );
        // `ldmatrix`/`stmatrix`: `.m8n8` and a register per matrix (`super::mma`).
        assert_eq!(checked("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%rd1], {%r1, %r2};"), None);
        refused(
            "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2}, [%rd1];",
            "`ldmatrix` takes 4 register(s) here, found 2",
        );
        refused(
            "stmatrix.sync.aligned.m8n8.shared.b16 [%rd1], {%r1, %r2};",
            "`stmatrix` needs one of `.x1`, `.x2`, `.x4`",
        );
        refused(
            "ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {%r1, %r2}, [%rd1];",
            "`ldmatrix` shapes other than `.m8n8` is not supported yet",
        );
        refused(
            "ldmatrix.sync.aligned.x1.shared.b16 {%r1}, [%rd1];",
            "`ldmatrix` needs a shape (`.m8n8`)",
        );
        refused(
            "wmma.load.a.sync.aligned.row.m16n16k16.f16 {%r1}, [%rd1], %r2, %r3;",
            "`wmma` load/store takes a fragment, an address and an optional stride",
        );
        refused("cvt.rz.ftz.ue8m0x2.f32 %h1, %f2, %f3;", "`cvt` takes no `.ftz`");
    }

    #[test]
    fn scale_factor_and_narrow_conversion_forms() {
        // §9.7.9.21: `.ue8m0x2` from two `.f32` or one `.bf16x2` (`.rz`, `.rp`), to `.bf16x2`.
        assert_eq!(checked("cvt.rp.satfinite.ue8m0x2.f32 %h1, %f2, %f3;"), None);
        assert_eq!(checked("cvt.rz.ue8m0x2.bf16x2 %h1, %r2;"), None);
        assert_eq!(checked("cvt.rn.bf16x2.ue8m0x2 %r1, %h2;"), None);
        refused(
            "cvt.rn.ue8m0x2.f32 %h1, %f2, %f3;",
            "conversions to `.ue8m0x2` need `.rz` or `.rp`",
        );
        refused(
            "cvt.rz.ue8m0x2.f32 %h1, %f2;",
            "`.ue8m0x2` converts from two `.f32` sources or one `.bf16x2`",
        );
        refused(
            "cvt.rz.bf16x2.ue8m0x2 %r1, %h2;",
            "`.ue8m0x2` converts to `.bf16x2` only, as `cvt.rn.bf16x2.ue8m0x2`",
        );
        refused("cvt.rn.bf16x2.ue8m0x2 %r1, %h2, %h3;", "this `cvt` takes 1 source");
        // The other narrow formats: `.satfinite`, not `.sat`; no x4 forms (only `.rs` has
        // them).
        assert_eq!(checked("cvt.rn.satfinite.relu.e4m3x2.f32 %h1, %f2, %f3;"), None);
        refused("cvt.rn.sat.f16.f32 %h1, %f2;", "narrow-format `cvt` saturates with `.satfinite`");
        refused(
            "cvt.rn.satfinite.e4m3x4.f32 %r1, %f2, %f3, %f4, %f5;",
            "`cvt` with `.e4m3x4` is not supported yet",
        );
        refused(
            "cvt.rn.pack.f16.f32 %h1, %f2;",
            "unknown or unsupported modifier `.pack` for `cvt`",
        );
        // A source per lane from `.f32`/`.f64`; no stochastic rounding.
        assert_eq!(checked("cvt.rn.bf16x2.f32 %r1, %f2, %f3;"), None);
        refused("cvt.rn.f16x2.f32 %r1, %f2;", "this `cvt` takes 2 source(s)");
        refused("cvt.rz.satfinite.e5m2x2.f64 %h1, %fd2;", "this `cvt` takes 2 source(s)");
        refused("cvt.rn.tf32.f32 %r1, %f2, %f3;", "this `cvt` takes 1 source(s)");
        let stochastic = "`cvt.rs` (stochastic rounding) is not supported yet";
        refused("cvt.rs.f16x2.f32 %r1, %f2, %f3, %r4;", stochastic);
        refused("cvt.rs.satfinite.e4m3x4.f32 %r1, {%f2, %f3, %f4, %f5}, %r6;", stochastic);
        refused("cvt.rs.satfinite.ue8m0x2.f32 %h1, %f2, %f3;", stochastic);
    }

    #[test]
    fn half_and_directed_rounding_forms() {
        assert_eq!(checked("add.rn.f16 %h1, %h2, %h3;"), None);
        assert_eq!(checked("fma.rn.relu.bf16x2 %r1, %r2, %r3, %r4;"), None);
        assert_eq!(checked("add.rz.ftz.sat.f32 %f1, %f2, %f3;"), None);
        refused("add.ftz.bf16 %h1, %h2, %h3;", "`add` takes no `.ftz`");
        refused("fma.rn.sat.relu.f16 %h1, %h2, %h3, %h4;", "`fma` takes no `.sat` with `.relu`");
        refused("mul.lo.f16 %h1, %h2, %h3;", "`mul` takes no `.lo/.hi/.wide`");
        refused("min.NaN.f16 %h1, %h2, %h3, %h4;", "`min` takes 3 operands here, found 4");
        refused("add.rz.sat.f64 %fd1, %fd2, %fd3;", "`add.sat` takes `.f32` as its last type");
        refused("mul.rm.s32 %r1, %r2, %r3;", "`mul` takes `.f32` or `.f64`");
    }

    /// §9.7.4.10-11, as ptxas 13 reads them: `ex2.approx.ftz.bf16{x2}` and
    /// `ex2.approx.f16{x2}` only; `tanh` without `.ftz` on every type.
    #[test]
    fn half_ex2_and_tanh_forms() {
        assert_eq!(checked("ex2.approx.ftz.bf16 %h1, %h2;"), None);
        assert_eq!(checked("ex2.approx.ftz.bf16x2 %r1, %r2;"), None);
        assert_eq!(checked("ex2.approx.f16x2 %r1, %r2;"), None);
        assert_eq!(checked("ex2.approx.ftz.f32 %f1, %f2;"), None);
        assert_eq!(checked("tanh.approx.bf16 %h1, %h2;"), None);
        refused("ex2.approx.bf16 %h1, %h2;", "`ex2` needs `.ftz`");
        refused("ex2.approx.bf16x2 %r1, %r2;", "`ex2` needs `.ftz`");
        refused("ex2.approx.ftz.f16 %h1, %h2;", "`ex2` takes no `.ftz`");
        refused("tanh.approx.ftz.f32 %f1, %f2;", "`tanh` takes no `.ftz`");
        refused("tanh.approx.ftz.bf16x2 %r1, %r2;", "`tanh` takes no `.ftz`");
    }
}
