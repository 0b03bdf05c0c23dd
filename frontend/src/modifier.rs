//! The typed modifiers of PTX instructions beyond the classes [`crate::decode`] keeps in
//! fields of their own (types, spaces, vectors, rounding, `.ftz`, `.sat`, comparisons,
//! combines, product halves): one enum per family, written once by `families!` with
//! the spelling of every value.
//!
//! A row of the instruction table ([`crate::instructions`]) lists the families its
//! instruction takes, in the order they are tried: a spelling that two families share
//! (`.b` is a surface access and a `wmma` fragment, `.clamp` a shift mode and a
//! surface boundary) means what the row's first family that knows it says. A modifier
//! of no family of its row is a diagnostic at its span when the instruction is decoded;
//! after that, nothing compares modifier text.

/// Declares the families: one enum per family with its spellings, the [`Family`] tags
/// that name them in the instruction table, and [`Modifier`], one of any family.
macro_rules! families {
    ($($(#[$doc:meta])* $family:ident { $($variant:ident = $spelling:literal),* $(,)? })*) => {
        $(
            $(#[$doc])*
            #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
            pub enum $family {
                $($variant),*
            }

            impl $family {
                /// The modifier as PTX spells it, with its dot.
                pub fn spelling(self) -> &'static str {
                    match self {
                        $($family::$variant => $spelling),*
                    }
                }

                fn parse(s: &str) -> Option<$family> {
                    match s {
                        $($spelling => Some($family::$variant),)*
                        _ => None,
                    }
                }
            }
        )*

        /// A family of modifiers, as a row of the instruction table names it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Family {
            $($family,)*
            /// `.mMnN` and `.mMnNkK`: a matrix shape ([`Shape`]).
            Shape,
            /// `.x1`, `.x2`, `.x4`: how many matrices (`ldmatrix`, `stmatrix`).
            Count,
        }

        /// One decoded modifier.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Modifier {
            $($family($family),)*
            Shape(Shape),
            Count(u32),
        }

        impl Family {
            /// `s` as a modifier of this family, if it is one.
            pub fn parse(self, s: &str) -> Option<Modifier> {
                match self {
                    $(Family::$family => $family::parse(s).map(Modifier::$family),)*
                    Family::Shape => Shape::parse(s).map(Modifier::Shape),
                    Family::Count => s
                        .strip_prefix(".x")
                        .and_then(|n| n.parse().ok())
                        .filter(|n| matches!(n, 1 | 2 | 4))
                        .map(Modifier::Count),
                }
            }
        }

        impl std::fmt::Display for Modifier {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self {
                    $(Modifier::$family(v) => f.write_str(v.spelling()),)*
                    Modifier::Shape(s) => write!(f, "{s}"),
                    Modifier::Count(n) => write!(f, ".x{n}"),
                }
            }
        }
    };
}

families! {
    /// Cache operators (PTX ISA 9.2 §9.7.9.1): performance hints, and `.nc` the
    /// non-coherent read-only path of `ld.global.nc`.
    CacheOp {
        Ca = ".ca",
        Cg = ".cg",
        Cs = ".cs",
        Lu = ".lu",
        Cv = ".cv",
        Wb = ".wb",
        Wt = ".wt",
        Nc = ".nc",
        Unified = ".unified",
    }
    /// Eviction priorities, prefetch sizes and cache policies of memory instructions
    /// (§9.7.9.8-9: `.level::eviction_priority`, `.level::prefetch_size`,
    /// `.level::cache_hint`).
    CacheHint {
        L1EvictNormal = ".L1::evict_normal",
        L1EvictUnchanged = ".L1::evict_unchanged",
        L1EvictFirst = ".L1::evict_first",
        L1EvictLast = ".L1::evict_last",
        L1NoAllocate = ".L1::no_allocate",
        L2EvictNormal = ".L2::evict_normal",
        L2EvictFirst = ".L2::evict_first",
        L2EvictLast = ".L2::evict_last",
        L2EvictUnchanged = ".L2::evict_unchanged",
        L2CacheHint = ".L2::cache_hint",
        L2Prefetch64B = ".L2::64B",
        L2Prefetch128B = ".L2::128B",
        L2Prefetch256B = ".L2::256B",
    }
    /// The cache level of `prefetch`, `discard` and `applypriority` (§9.7.9.15-17).
    CacheLevel {
        L1 = ".L1",
        L2 = ".L2",
        Tensormap = ".tensormap",
    }
    /// Memory orders (§8.4, §9.7.9.8-9).
    MemoryOrder {
        Weak = ".weak",
        Relaxed = ".relaxed",
        Acquire = ".acquire",
        Release = ".release",
        AcqRel = ".acq_rel",
        Sc = ".sc",
        Volatile = ".volatile",
        Mmio = ".mmio",
    }
    /// Scopes (§8.5); `.gl` is `membar`'s spelling of `.gpu`.
    Scope {
        Cta = ".cta",
        Cluster = ".cluster",
        Gpu = ".gpu",
        Sys = ".sys",
        Gl = ".gl",
    }
    /// The arithmetic operations of atomics, reductions and video secondaries
    /// (§9.7.13.5-6, §9.7.9.24); the bitwise ones are [`crate::decode::BoolOp`].
    Reduction {
        Add = ".add",
        Inc = ".inc",
        Dec = ".dec",
        Exch = ".exch",
        Cas = ".cas",
        Min = ".min",
        Max = ".max",
    }
    /// `.cc`: the instruction writes the carry flag (§9.7.2).
    Carry {
        Cc = ".cc",
    }
    /// `.uni`: the branch is not divergent (§9.7.13.2).
    Uniform {
        Uni = ".uni",
    }
    /// `.sync` and `.aligned`: every thread of the warp (or CTA) executes the
    /// instruction together (§9.7.13).
    Convergence {
        Sync = ".sync",
        Aligned = ".aligned",
    }
    /// The lane pattern of `shfl` (§9.7.9.6).
    Shuffle {
        Up = ".up",
        Down = ".down",
        Bfly = ".bfly",
        Idx = ".idx",
    }
    /// `brx.idx` (§9.7.13.3).
    Indexed {
        Idx = ".idx",
    }
    /// The modes of `vote` and `match` (§9.7.13.10-11).
    Vote {
        All = ".all",
        Any = ".any",
        Uni = ".uni",
        Ballot = ".ballot",
    }
    /// Float modes beyond `.ftz` and `.sat` (§9.7.3, §9.7.4, §9.7.9.21).
    FloatOption {
        Relu = ".relu",
        NaN = ".NaN",
        Xorsign = ".xorsign",
        Abs = ".abs",
        NoFtz = ".noftz",
        Satfinite = ".satfinite",
        Oob = ".oob",
    }
    /// `.approx` and `.full`: the precision of float division and special functions
    /// (§9.7.3.8, §9.7.4).
    Precision {
        Approx = ".approx",
        Full = ".full",
    }
    /// Roundings of conversions that [`crate::decode::Rounding`] does not name: to
    /// nearest with ties away from zero, and stochastic (§9.7.9.21).
    ConvertRounding {
        Rna = ".rna",
        Rs = ".rs",
    }
    /// `cvt.pack` (§9.7.9.21) and `cvta.to` (§9.7.9.19).
    Conversion {
        Pack = ".pack",
        To = ".to",
    }
    /// Types no register has: sub-byte integers, packed integers and the small float
    /// formats (§5.2.5), read by the instructions that pack or unpack them.
    Format {
        B1 = ".b1",
        B4 = ".b4",
        U2 = ".u2",
        S2 = ".s2",
        U4 = ".u4",
        S4 = ".s4",
        U16x2 = ".u16x2",
        S16x2 = ".s16x2",
        U8x4 = ".u8x4",
        S8x4 = ".s8x4",
        E4m3 = ".e4m3",
        E5m2 = ".e5m2",
        E2m3 = ".e2m3",
        E3m2 = ".e3m2",
        E2m1 = ".e2m1",
        Ue8m0 = ".ue8m0",
        E4m3x2 = ".e4m3x2",
        E5m2x2 = ".e5m2x2",
        E2m3x2 = ".e2m3x2",
        E3m2x2 = ".e3m2x2",
        E2m1x2 = ".e2m1x2",
        Ue8m0x2 = ".ue8m0x2",
        E4m3x4 = ".e4m3x4",
        E5m2x4 = ".e5m2x4",
        E2m3x4 = ".e2m3x4",
        E3m2x4 = ".e3m2x4",
        E2m1x4 = ".e2m1x4",
        S2f6x2 = ".s2f6x2",
    }
    /// Texture and surface geometries (§9.7.10.3).
    Geometry {
        D1 = ".1d",
        D2 = ".2d",
        D3 = ".3d",
        A1d = ".a1d",
        A2d = ".a2d",
        Cube = ".cube",
        Acube = ".acube",
        D2ms = ".2dms",
        A2dms = ".a2dms",
    }
    /// How `tex` picks the level of detail (§9.7.10.3).
    Lod {
        Level = ".level",
        Grad = ".grad",
        Base = ".base",
    }
    /// The component `tld4` gathers (§9.7.10.4).
    Component {
        R = ".r",
        G = ".g",
        B = ".b",
        A = ".a",
    }
    /// The attribute `txq` and `suq` read (§9.7.10.5, §9.7.11.4).
    Query {
        Width = ".width",
        Height = ".height",
        Depth = ".depth",
        ChannelDataType = ".channel_data_type",
        ChannelOrder = ".channel_order",
        NormalizedCoords = ".normalized_coords",
        FilterMode = ".filter_mode",
        AddrMode0 = ".addr_mode_0",
        AddrMode1 = ".addr_mode_1",
        AddrMode2 = ".addr_mode_2",
        Samples = ".samples",
        ForceUnnormalizedCoords = ".force_unnormalized_coords",
        ArraySize = ".array_size",
        NumMipmapLevels = ".num_mipmap_levels",
        NumSamples = ".num_samples",
        Level = ".level",
        MemoryLayout = ".memory_layout",
    }
    /// Unformatted (`.b`) or formatted (`.p`) surface access (§9.7.11.1).
    SurfaceAccess {
        B = ".b",
        P = ".p",
    }
    /// What an out-of-bounds surface access does (§9.7.11.1).
    Boundary {
        Trap = ".trap",
        Clamp = ".clamp",
        Zero = ".zero",
    }
    /// Clamping or wrapping of shift amounts and video shifts (§9.7.8.8, §9.7.9.24).
    Clamp {
        Clamp = ".clamp",
        Wrap = ".wrap",
    }
    /// The direction of a funnel shift (§9.7.8.8).
    ShiftDirection {
        L = ".l",
        R = ".r",
    }
    /// `bfind.shiftamt` (§9.7.8.10).
    Bfind {
        Shiftamt = ".shiftamt",
    }
    /// The modes of `prmt` (§9.7.9.7).
    PermuteMode {
        F4e = ".f4e",
        B4e = ".b4e",
        Rc8 = ".rc8",
        Ecl = ".ecl",
        Ecr = ".ecr",
        Rc16 = ".rc16",
    }
    /// The classes `testp` tests for (§9.7.3.3).
    FloatClass {
        Finite = ".finite",
        Infinite = ".infinite",
        Number = ".number",
        NotANumber = ".notanumber",
        Normal = ".normal",
        Subnormal = ".subnormal",
    }
    /// `vmad`'s result scaling (§9.7.9.24).
    VideoScale {
        Po = ".po",
        Shr7 = ".shr7",
        Shr15 = ".shr15",
    }
    /// The forms of `bar` and `barrier` (§9.7.13.1).
    BarrierForm {
        Arrive = ".arrive",
        Red = ".red",
        Warp = ".warp",
        Wait = ".wait",
    }
    /// `.popc`: a population count (`bar.red.popc`, `mma….popc`).
    Population {
        Popc = ".popc",
    }
    /// The forms of `mbarrier` (§9.7.13.15).
    MbarrierForm {
        Init = ".init",
        Inval = ".inval",
        Arrive = ".arrive",
        ArriveDrop = ".arrive_drop",
        ExpectTx = ".expect_tx",
        CompleteTx = ".complete_tx",
        TestWait = ".test_wait",
        TryWait = ".try_wait",
        PendingCount = ".pending_count",
        Parity = ".parity",
        NoComplete = ".noComplete",
    }
    /// The forms of `cp` (§9.7.9.25): asynchronous, bulk and tensor copies, their
    /// groups and completion mechanisms.
    CopyForm {
        Async = ".async",
        Bulk = ".bulk",
        Tensor = ".tensor",
        Reduce = ".reduce",
        BulkGroup = ".bulk_group",
        CommitGroup = ".commit_group",
        WaitGroup = ".wait_group",
        WaitAll = ".wait_all",
        Read = ".read",
        Prefetch = ".prefetch",
        L2 = ".L2",
        Tile = ".tile",
        Im2col = ".im2col",
        Mbarrier = ".mbarrier",
        Arrive = ".arrive",
        NoInc = ".noinc",
        IgnoreOob = ".ignore_oob",
        CpMask = ".cp_mask",
        CompleteTxBytes = ".mbarrier::complete_tx::bytes",
        MulticastCluster = ".multicast::cluster",
    }
    /// The state spaces of `cp`, destination then source, as spelled (`.shared::cta`
    /// and `.shared::cluster` differ in what `cp.async` accepts).
    CopySpace {
        Global = ".global",
        Shared = ".shared",
        SharedCta = ".shared::cta",
        SharedCluster = ".shared::cluster",
    }
    /// The dimensions of a tensor copy (`cp.async.bulk.tensor.2d`, §9.7.9.25.5).
    TensorDims {
        D1 = ".1d",
        D2 = ".2d",
        D3 = ".3d",
        D4 = ".4d",
        D5 = ".5d",
    }
    /// The forms of `fence` and `membar` (§9.7.13.4).
    FenceForm {
        Proxy = ".proxy",
        Alias = ".alias",
        Async = ".async",
        AsyncGeneric = ".async::generic",
        AsyncGlobal = ".async::global",
        AsyncSharedCta = ".async::shared::cta",
        AsyncSharedCluster = ".async::shared::cluster",
        TensormapGeneric = ".tensormap::generic",
        MbarrierInit = ".mbarrier_init",
        OpRestrict = ".op_restrict",
        SyncRestrictSharedCta = ".sync_restrict::shared::cta",
        SyncRestrictSharedCluster = ".sync_restrict::shared::cluster",
    }
    /// Matrix layouts (§9.7.14).
    Layout {
        Row = ".row",
        Col = ".col",
    }
    /// `ldmatrix.trans`, `stmatrix.trans`, `movmatrix.trans` (§9.7.14.5.15-17).
    Transpose {
        Trans = ".trans",
    }
    /// The operation of `wmma` (§9.7.14.4).
    WmmaOp {
        Load = ".load",
        Store = ".store",
        Mma = ".mma",
    }
    /// The fragment a `wmma.load`/`wmma.store` moves (§9.7.14.4).
    Fragment {
        A = ".a",
        B = ".b",
        C = ".c",
        D = ".d",
    }
    /// `griddepcontrol` (§9.7.13.17).
    GridDependency {
        LaunchDependents = ".launch_dependents",
        Wait = ".wait",
    }
    /// The kinds of cache policy `createpolicy` makes (§9.7.9.18).
    Policy {
        Fractional = ".fractional",
        Range = ".range",
        Cvt = ".cvt",
    }
    /// `pmevent.mask` (§9.7.19.2).
    EventMask {
        Mask = ".mask",
    }
    /// The direction of `setmaxnreg` (§9.7.13.18).
    RegisterCount {
        Inc = ".inc",
        Dec = ".dec",
    }
}

/// A matrix shape, `.mMnN` or `.mMnNkK` (§9.7.14).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub m: u32,
    pub n: u32,
    pub k: Option<u32>,
}

impl Shape {
    fn parse(s: &str) -> Option<Shape> {
        let rest = s.strip_prefix(".m")?;
        let (m, rest) = rest.split_once('n')?;
        let (n, k) = match rest.split_once('k') {
            Some((n, k)) => (n, Some(k.parse().ok()?)),
            None => (rest, None),
        };
        Some(Shape { m: m.parse().ok()?, n: n.parse().ok()?, k })
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, ".m{}n{}", self.m, self.n)?;
        match self.k {
            Some(k) => write!(f, "k{k}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        assert_eq!(Family::CacheOp.parse(".nc"), Some(Modifier::CacheOp(CacheOp::Nc)));
        assert_eq!(Family::Scope.parse(".nc"), None);
        let s = Family::Shape.parse(".m16n8k16");
        assert_eq!(s, Some(Modifier::Shape(Shape { m: 16, n: 8, k: Some(16) })));
        assert_eq!(s.map(|s| s.to_string()).as_deref(), Some(".m16n8k16"));
        assert_eq!(
            Family::Shape.parse(".m8n8"),
            Some(Modifier::Shape(Shape { m: 8, n: 8, k: None }))
        );
        assert_eq!(Family::Count.parse(".x4"), Some(Modifier::Count(4)));
        assert_eq!(Family::Count.parse(".x3"), None);
        assert_eq!(Modifier::Reduction(Reduction::Exch).to_string(), ".exch");
    }
}
