//! Checked launches, the host side (`docs/status.md`, *Checked launches*): which launches
//! are checked, the allocation table a checked kernel searches, and the report of what it
//! refused, in the style of NVIDIA's compute-sanitizer. The instrumentation itself is the
//! compiler pass `ptxvk_lower::pass::check`; the records' layout is
//! `ptxvk_abi::system`'s.

use ptxvk_abi::system::{self, Violation};
use ptxvk_frontend::{ast, SourceMap};
use ptxvk_lower::ir::{AccessKind, CheckSite, Space};
use ptxvk_vk::Range;

/// The environment variable that checks every launch of a device, the driver
/// library's included: a comma-separated list of `memcheck`, `racecheck` and
/// `initcheck` (each of the last two includes memcheck), or `off` (the default).
pub const ENV_CHECK: &str = "PTXVK_CHECK";
/// The environment variable with the number of violations a checked launch's report
/// lists (default [`DEFAULT_LIMIT`]); the count of all is always given.
pub const ENV_CHECK_LIMIT: &str = "PTXVK_CHECK_LIMIT";
/// Violations listed by default.
pub const DEFAULT_LIMIT: usize = 10;

/// Which checks a device's launches get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckConfig {
    /// Every access of the program's memory instructions is tested against what the
    /// launch may access; one that fails does not happen and is reported.
    pub memcheck: bool,
    /// With memcheck: each shared access that is not an atomic is tested against the
    /// other accesses of its block since the last barrier, and one that races with
    /// another thread's is reported (it still happens).
    pub racecheck: bool,
    /// With memcheck: each global read (and atomic) of device memory is tested against
    /// what the host and kernels have written, and one of words nothing wrote is
    /// reported (it still happens). Device allocations made while it is on get write
    /// shadows (`ptxvk_vk`'s `shadow` module).
    pub initcheck: bool,
    /// How many violations a report lists.
    pub limit: usize,
}

impl Default for CheckConfig {
    fn default() -> CheckConfig {
        CheckConfig { memcheck: false, racecheck: false, initcheck: false, limit: DEFAULT_LIMIT }
    }
}

impl CheckConfig {
    /// memcheck, listing [`DEFAULT_LIMIT`] violations.
    pub fn memcheck() -> CheckConfig {
        CheckConfig { memcheck: true, ..CheckConfig::default() }
    }

    /// memcheck and racecheck.
    pub fn racecheck() -> CheckConfig {
        CheckConfig { racecheck: true, ..CheckConfig::memcheck() }
    }

    /// memcheck and initcheck.
    pub fn initcheck() -> CheckConfig {
        CheckConfig { initcheck: true, ..CheckConfig::memcheck() }
    }

    /// Whether any check is on.
    pub fn any(&self) -> bool {
        self.memcheck || self.racecheck || self.initcheck
    }

    /// The checks a comma-separated list of tools names (`memcheck`, `racecheck`,
    /// `initcheck`, `off`), as `PTXVK_CHECK` and `ptxvk run --check=` take it; racecheck
    /// and initcheck include memcheck, whose bounds test keeps their shadows in range.
    pub fn parse_tools(tools: &str) -> Result<CheckConfig, String> {
        let mut config = CheckConfig::default();
        for tool in tools.split(',').map(str::trim) {
            match tool {
                "" | "off" | "none" => {}
                "memcheck" => config.memcheck = true,
                "racecheck" => config = CheckConfig { racecheck: true, memcheck: true, ..config },
                "initcheck" => config = CheckConfig { initcheck: true, memcheck: true, ..config },
                other => {
                    return Err(format!(
                        "unknown tool `{other}`: expected `memcheck`, `racecheck`, `initcheck` \
                         or `off`"
                    ))
                }
            }
        }
        Ok(config)
    }
}

/// Where a checked access is in the program's source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteSource {
    /// `file.ptx:line`.
    pub ptx: String,
    /// The PTX instruction as written.
    pub instruction: String,
    /// `file.cu:line` from the `.loc` directive before the instruction, when the PTX
    /// has line information.
    pub source: Option<String>,
}

/// Where the spans of a module's instructions are in its source: built once per module
/// (it walks every function's `.loc` directives), then asked for each kernel's sites.
#[derive(Debug)]
pub struct SourcePlaces {
    lines: LineTable,
}

impl SourcePlaces {
    /// The places of the sources whose parse is `module`.
    pub fn new(module: &ast::Module) -> Self {
        SourcePlaces { lines: LineTable::new(module) }
    }

    /// Where each of `sites` is in `sources`.
    pub fn sites(&self, sources: &SourceMap, sites: &[CheckSite]) -> Vec<SiteSource> {
        self.spans(sources, sites.iter().map(|s| s.span))
    }

    /// Where each of `spans` is in `sources`: also the loops a loop-limit failure names
    /// (`ptxvk_lower::pass::loop_guard`).
    pub fn spans(
        &self,
        sources: &SourceMap,
        spans: impl Iterator<Item = ptxvk_frontend::Span>,
    ) -> Vec<SiteSource> {
        let text = sources.text();
        spans
            .map(|span| {
                let (file, line, _) = sources.location(span.start);
                let range = span.start as usize..span.end as usize;
                let instruction = text.get(range).unwrap_or("").split_whitespace();
                SiteSource {
                    ptx: format!("{file}:{line}"),
                    instruction: instruction.collect::<Vec<_>>().join(" "),
                    source: self.lines.source_line(span.start),
                }
            })
            .collect()
    }
}

/// The `.loc` directives of a module's functions and its `.file` names, for
/// [`SiteSource::source`].
#[derive(Debug)]
struct LineTable {
    /// (function start, function end, directive offset, file index, line), by offset.
    locs: Vec<(u32, u32, u32, u32, u32)>,
    files: Vec<(u32, String)>,
}

impl LineTable {
    fn new(module: &ast::Module) -> LineTable {
        fn walk(stmts: &[ast::Statement], f: (u32, u32), out: &mut Vec<(u32, u32, u32, u32, u32)>) {
            for s in stmts {
                match s {
                    ast::Statement::Directive(d) => {
                        if let ast::DirectiveKind::Loc(loc) = &d.kind {
                            out.push((f.0, f.1, d.span.start, loc.file, loc.line));
                        }
                    }
                    ast::Statement::Block(inner, _) => walk(inner, f, out),
                    _ => {}
                }
            }
        }
        let mut locs = Vec::new();
        let mut files = Vec::new();
        for item in &module.items {
            match item {
                ast::Item::Function(func) => {
                    if let Some(body) = &func.body {
                        walk(body, (func.span.start, func.span.end), &mut locs);
                    }
                }
                ast::Item::Directive(ast::Directive {
                    kind: ast::DirectiveKind::File { index, path, .. },
                    ..
                }) => files.push((*index, path.value.clone())),
                _ => {}
            }
        }
        locs.sort_unstable_by_key(|l| l.2);
        LineTable { locs, files }
    }

    /// `file:line` of the last `.loc` before `offset` in the same function.
    fn source_line(&self, offset: u32) -> Option<String> {
        let before = self.locs.partition_point(|l| l.2 < offset);
        let &(start, end, _, file, line) = self.locs.get(before.checked_sub(1)?)?;
        if !(start..end).contains(&offset) {
            return None;
        }
        let name = self.files.iter().find(|f| f.0 == file).map_or("?", |f| f.1.as_str());
        Some(format!("{name}:{line}"))
    }
}

/// An allocation a checked launch may access, with the name its report gives it.
#[derive(Clone, Debug)]
pub(crate) struct Region {
    pub range: Range,
    /// How the report names it: "passed as argument 0", "of the module's
    /// `.global`/`.const` variables", ….
    pub name: String,
    /// Memory of the runtime's that the program may only read (the parameter block):
    /// read-only in the table, and the nearest allocation of a report only when the
    /// address is inside it or no other allocation is live, since a stray pointer is
    /// rarely meant for it.
    pub internal: bool,
    /// Under initcheck, the device address of its write shadow (0 for none).
    pub shadow: u64,
}

/// The allocation table of a checked launch (`ptxvk_abi::system`): a count, then
/// (start, end) entries sorted by start after a (0, 0) entry, then each entry's write
/// shadow.
pub(crate) fn table(regions: &[Region]) -> Vec<u8> {
    // The runtime's own memory the kernel may read (its parameter block) is read-only.
    let mut ranges: Vec<(Range, bool, u64)> =
        regions.iter().map(|r| (r.range, r.internal, r.shadow)).collect();
    ranges.sort_unstable();
    let n = ranges.len() + 1;
    let mut out = vec![0u8; system::TABLE_ENTRIES as usize + 24 * n];
    out[..4].copy_from_slice(&(n as u32).to_le_bytes());
    for (i, (r, read_only, shadow)) in ranges.iter().enumerate() {
        let at = system::TABLE_ENTRIES as usize + 16 * (i + 1);
        let end = (r.start + r.size) | if *read_only { system::TABLE_READ_ONLY } else { 0 };
        out[at..at + 8].copy_from_slice(&r.start.to_le_bytes());
        out[at + 8..at + 16].copy_from_slice(&end.to_le_bytes());
        let at = system::TABLE_ENTRIES as usize + 16 * n + 8 * (i + 1);
        out[at..at + 8].copy_from_slice(&shadow.to_le_bytes());
    }
    out
}

/// What a checked launch's report needs besides its records.
#[derive(Debug)]
pub(crate) struct CheckContext {
    pub kernel: String,
    pub sites: Vec<CheckSite>,
    /// Shared with the compiled module: every checked or confined launch names them.
    pub sources: std::sync::Arc<[SiteSource]>,
    pub regions: Vec<Region>,
    pub freed: Vec<Range>,
    /// Static and dynamic shared bytes of the launch.
    pub shared: (u32, u32),
    pub local_bytes: u32,
    pub param_bytes: u32,
    pub limit: usize,
    /// The launch's block size, which racecheck's linear thread indices unravel.
    pub block: [u32; 3],
    /// Per kernel parameter, the allocation (start, end) its pointer value points into,
    /// or (0, 0) (`ptxvk_abi::system`'s parameter ranges), and its write shadow; under
    /// confinement, the confinement range alone.
    pub param_ranges: Vec<(u64, u64, u64)>,
    /// The device's confinement range, when the launch is confined rather than
    /// memchecked (`ptxvk_lower::pass::check`, *Confinement*).
    pub confinement: Option<Range>,
}

/// What a checked launch refused, and the races racecheck found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckReport {
    /// How many accesses were refused.
    pub count: usize,
    /// How many reads of memory nothing had written were made (initcheck; they
    /// happened).
    pub uninitialized: usize,
    /// Violations counted but not recorded, when the report has races or unwritten
    /// reads too (else they count as refused accesses): a thread records only its first
    /// refused global access (its last under confinement), and the area keeps at most
    /// [`system::CHECK_CAPACITY`].
    pub unrecorded: usize,
    /// The first of them (at most the configured limit), in the order threads made them,
    /// then the first reads of unwritten memory.
    pub violations: Vec<ViolationInfo>,
    /// The shared-memory races, one per pair of instructions (at most the configured
    /// limit), in the order they were first seen.
    pub races: Vec<RaceInfo>,
    /// The report as text, in compute-sanitizer's style.
    pub text: String,
}

/// Two instructions whose accesses to the same shared bytes raced: between the same two
/// barriers, from two threads of a block, at least one a write, neither an atomic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaceInfo {
    /// The access seen first (in the shadow), and the one that found it there.
    pub first: RaceAccess,
    pub second: RaceAccess,
    /// The byte offset in the shared window of the first hazard seen, and its block.
    pub offset: u64,
    pub ctaid: [u32; 3],
    /// Whether the two threads of every hazard were in the same warp: code written
    /// for NVIDIA's lockstep warps, missing a `__syncwarp()` (else a `__syncthreads()`).
    pub same_warp: bool,
    /// How many accesses found this race (each thread's each time).
    pub hazards: usize,
}

/// One side of a [`RaceInfo`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaceAccess {
    pub access: AccessKind,
    pub tid: [u32; 3],
    pub site: SiteSource,
}

/// One refused access, or a read of unwritten memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViolationInfo {
    /// Misaligned (its address is not a multiple of its size), rather than outside what
    /// the launch may access.
    pub misaligned: bool,
    /// A read (or atomic) of device memory that neither the host nor a kernel has
    /// written (initcheck), which was not refused.
    pub uninitialized: bool,
    pub space: Space,
    pub access: AccessKind,
    /// Bytes accessed.
    pub size: u32,
    /// A device address for global memory; an offset in the space for the others.
    pub address: u64,
    pub ctaid: [u32; 3],
    pub tid: [u32; 3],
    /// Where the instruction is.
    pub site: SiteSource,
    /// Where the address is, in words ("is out of bounds: 4,096 bytes after the end of
    /// the 16-byte allocation passed as argument 0 (0x…)").
    pub place: String,
}

/// The report of a checked launch with `count` violations, of which `records` were
/// kept; `None` when there were none.
pub(crate) fn report(ctx: &CheckContext, count: u32, records: &[Violation]) -> Option<CheckReport> {
    if count == 0 {
        return None;
    }
    let (race_records, access_records): (Vec<&Violation>, Vec<&Violation>) =
        records.iter().partition(|v| v.kind == system::VIOLATION_RACE);
    // One record per access: an instruction that sema expanded into several accesses
    // of the same address by the same thread (a compare-and-swap loop) is one.
    let mut seen = std::collections::BTreeSet::new();
    let mut listed = Vec::new();
    for v in &access_records {
        let span = ctx.sites.get(v.site as usize).map(|s| s.span);
        if seen.insert((span, v.address, v.ctaid, v.tid, v.kind)) {
            listed.push(*v);
        }
    }
    let (unwritten, refused): (Vec<&Violation>, Vec<&Violation>) =
        listed.into_iter().partition(|v| v.kind == system::VIOLATION_UNINITIALIZED);
    // Violations counted but not recorded: a thread records only its first refused
    // global access (its last under confinement; `pass::check`'s deferred records),
    // and the area keeps at most
    // CHECK_CAPACITY. Without races or unwritten reads, they are all refused accesses.
    let mut unrecorded = (count as usize).saturating_sub(records.len());
    let mut total = refused.len();
    if race_records.is_empty() && unwritten.is_empty() {
        total += unrecorded;
        unrecorded = 0;
    }
    let limited = |n: usize| {
        if n > ctx.limit {
            format!(", the first {} listed", ctx.limit)
        } else {
            String::new()
        }
    };
    let mut out = String::new();
    let mut violations = Vec::new();
    if total > 0 {
        out = format!(
            "{}: kernel `{}` made {} invalid access{}; {} refused{}:\n",
            if ctx.confinement.is_some() { "confinement" } else { "memcheck" },
            ctx.kernel,
            total,
            if total == 1 { "" } else { "es" },
            if total == 1 { "it was" } else { "they were" },
            if refused.len() < total && refused.len() <= ctx.limit {
                format!(", {} listed (each thread's first)", refused.len())
            } else {
                limited(total)
            },
        );
        let listed: Vec<ViolationInfo> =
            refused.iter().take(ctx.limit).filter_map(|v| info(ctx, v)).collect();
        for v in &listed {
            out.push_str(&describe(&ctx.kernel, v));
        }
        violations.extend(listed);
    }
    if !unwritten.is_empty() {
        let n = unwritten.len();
        out.push_str(&format!(
            "initcheck: kernel `{}` made {n} read{} of device memory nothing has written{}:\n",
            ctx.kernel,
            if n == 1 { "" } else { "s" },
            limited(n),
        ));
        let listed: Vec<ViolationInfo> =
            unwritten.iter().take(ctx.limit).filter_map(|v| info(ctx, v)).collect();
        for v in &listed {
            out.push_str(&describe(&ctx.kernel, v));
        }
        violations.extend(listed);
    }
    let races = races(ctx, &race_records);
    if !races.is_empty() {
        let hazards: usize = races.iter().map(|r| r.hazards).sum();
        out.push_str(&format!(
            "racecheck: kernel `{}` has {} data race{} on shared memory ({} hazard{}){}:\n",
            ctx.kernel,
            races.len(),
            if races.len() == 1 { "" } else { "s" },
            hazards,
            if hazards == 1 { "" } else { "s" },
            if races.len() > ctx.limit {
                format!(", the first {} listed", ctx.limit)
            } else {
                String::new()
            },
        ));
    }
    let races: Vec<RaceInfo> = races.into_iter().take(ctx.limit).collect();
    for r in &races {
        out.push_str(&describe_race(&ctx.kernel, r));
    }
    if unrecorded > 0 {
        out.push_str(&format!(
            "========= {} more violations were counted but not recorded (a thread records its \
             first refused global access; at most {} records are kept)\n",
            thousands(unrecorded as u64),
            thousands(u64::from(system::CHECK_CAPACITY))
        ));
    }
    let uninitialized = unwritten.len();
    Some(CheckReport { count: total, uninitialized, unrecorded, violations, races, text: out })
}

/// The races of `records` (all [`system::VIOLATION_RACE`]), one per pair of sites.
fn races(ctx: &CheckContext, records: &[&Violation]) -> Vec<RaceInfo> {
    let mut races: Vec<((u32, u32), RaceInfo)> = Vec::new();
    let [x, y, _] = ctx.block.map(|d| u64::from(d.max(1)));
    let linear = |t: [u32; 3]| u64::from(t[0]) + x * (u64::from(t[1]) + y * u64::from(t[2]));
    for v in records {
        let other_thread = (v.address >> system::RACE_OTHER_THREAD) & 0x3ff;
        let other_site = ((v.address >> system::RACE_OTHER_SITE) & 0x1f_ffff) as u32;
        let other_wrote = v.address >> system::RACE_OTHER_WROTE != 0;
        let pair = (v.site.min(other_site), v.site.max(other_site));
        let same_warp = other_thread / 32 == linear(v.tid) / 32;
        if let Some((_, r)) = races.iter_mut().find(|(p, _)| *p == pair) {
            r.hazards += 1;
            r.same_warp &= same_warp;
            continue;
        }
        let known = (other_site as usize) < ctx.sites.len();
        let Some(site) = ctx.sites.get(v.site as usize).filter(|_| known) else {
            continue;
        };
        let source = |i: u32| ctx.sources.get(i as usize).cloned().unwrap_or_else(unknown_site);
        let other_tid =
            [other_thread % x, other_thread / x % y, other_thread / (x * y)].map(|i| i as u32);
        let first = RaceAccess {
            access: if other_wrote { AccessKind::Write } else { AccessKind::Read },
            tid: other_tid,
            site: source(other_site),
        };
        let second = RaceAccess { access: site.access, tid: v.tid, site: source(v.site) };
        races.push((
            pair,
            RaceInfo {
                offset: v.address & 0xffff_ffff,
                ctaid: v.ctaid,
                same_warp,
                first,
                second,
                hazards: 1,
            },
        ));
    }
    races.into_iter().map(|(_, r)| r).collect()
}

/// One race of kernel `kernel`, as compute-sanitizer's racecheck words it, and what
/// orders the two accesses.
fn describe_race(kernel: &str, r: &RaceInfo) -> String {
    let side = |a: &RaceAccess| {
        let at = match &a.site.source {
            Some(s) => format!("{s} ({})", a.site.ptx),
            None => a.site.ptx.clone(),
        };
        let [x, y, z] = a.tid;
        let kind = if a.access == AccessKind::Read { "Read" } else { "Write" };
        format!("{kind} access at {at} in {kernel}: {} by thread ({x},{y},{z})", a.site.instruction)
    };
    let [bx, by, bz] = r.ctaid;
    let mut out = format!("========= Error: Race reported between {}\n", side(&r.first));
    out.push_str(&format!("=========     and {}\n", side(&r.second)));
    out.push_str(&format!(
        "=========     at shared offset {:#x} in block ({bx},{by},{bz}) [{} hazard{}]\n",
        r.offset,
        r.hazards,
        if r.hazards == 1 { "" } else { "s" }
    ));
    out.push_str(if r.same_warp {
        "=========     Both threads are in one warp: missing __syncwarp() between the accesses. \
         NVIDIA GPUs before Volta ran a warp in lockstep, which hid this race; other GPUs \
         (and independent thread scheduling) run a warp's threads in any order.\n"
    } else {
        "=========     Threads of different warps race here: missing __syncthreads() \
         between the accesses.\n"
    });
    out
}

fn unknown_site() -> SiteSource {
    SiteSource { ptx: "?".to_string(), instruction: String::new(), source: None }
}

/// A record made readable; `None` for a site the kernel does not have (a ptxvk bug).
fn info(ctx: &CheckContext, v: &Violation) -> Option<ViolationInfo> {
    let site = ctx.sites.get(v.site as usize)?;
    let misaligned = v.kind == system::VIOLATION_MISALIGNED;
    let uninitialized = v.kind == system::VIOLATION_UNINITIALIZED;
    let place = if misaligned {
        format!("is not a multiple of {} (PTX ISA §6.4.1)", site.size)
    } else if uninitialized {
        unwritten_place(ctx, v.address)
    } else {
        match (site.space, ctx.confinement) {
            (Space::Global, Some(r)) => format!(
                "is outside the memory this process's kernels may reach ({:#x} to {:#x}, \
                 every allocation made through ptxvk): refused by confinement (set \
                 PTXVK_CHECK=memcheck to see which allocation it missed)",
                r.start,
                r.start + r.size
            ),
            (Space::Global, None) => nearest(ctx, v.address, site.size, site.access),
            (Space::Shared, _) => {
                let (s, d) = ctx.shared;
                format!(
                    "is out of bounds: the block has {} bytes of shared memory ({} static, {} dynamic)",
                    thousands(u64::from(s) + u64::from(d)),
                    thousands(u64::from(s)),
                    thousands(u64::from(d))
                )
            }
            (Space::Local, _) => format!(
                "is out of bounds: the thread's local memory has {} bytes",
                thousands(u64::from(ctx.local_bytes))
            ),
            (Space::Param, _) => format!(
                "is out of bounds: the parameter block has {} bytes",
                thousands(u64::from(ctx.param_bytes))
            ),
            // `pass::check` instruments accesses after `pass::expand_generic`, which
            // leaves none of a generic address.
            (Space::Generic, _) => "is out of bounds".to_string(),
        }
    };
    Some(ViolationInfo {
        misaligned,
        uninitialized,
        space: site.space,
        access: site.access,
        size: site.size,
        address: v.address,
        ctaid: v.ctaid,
        tid: v.tid,
        site: ctx.sources.get(v.site as usize).cloned().unwrap_or_else(unknown_site),
        place,
    })
}

/// One violation of kernel `kernel`, as compute-sanitizer words it.
fn describe(kernel: &str, v: &ViolationInfo) -> String {
    let space = match v.space {
        Space::Global => "__global__",
        Space::Shared => "__shared__",
        Space::Local => "__local__",
        Space::Param => "__param__",
        Space::Generic => "__generic__",
    };
    let mut out = if v.uninitialized {
        format!("========= Uninitialized {space} memory read of size {} bytes\n", v.size)
    } else {
        let kind = if v.misaligned { "Misaligned" } else { "Invalid" };
        format!("========= {kind} {space} {} of size {} bytes\n", v.access.name(), v.size)
    };
    let src = &v.site;
    let at = match &src.source {
        Some(s) => format!("{s} ({})", src.ptx),
        None => src.ptx.clone(),
    };
    out.push_str(&format!("=========     at {at} in {kernel}: {}\n", src.instruction));
    let [bx, by, bz] = v.ctaid;
    let [tx, ty, tz] = v.tid;
    out.push_str(&format!("=========     by thread ({tx},{ty},{tz}) in block ({bx},{by},{bz})\n"));
    let address = if v.space == Space::Global {
        format!("{:#x}", v.address)
    } else {
        format!("{:#x} ({} offset)", v.address, v.space.name())
    };
    out.push_str(&format!("=========     Address {address} {}\n", v.place));
    out
}

/// Where a global `address` is relative to the allocations: inside a freed one, or the
/// distance to the nearest live one.
fn nearest(ctx: &CheckContext, address: u64, size: u32, access: AccessKind) -> String {
    if let Some(f) = ctx.freed.iter().rev().find(|f| (f.start..f.start + f.size).contains(&address))
    {
        return format!(
            "is {} bytes inside a {}-byte allocation that was freed before the launch",
            thousands(address - f.start),
            thousands(f.size)
        );
    }
    let distance = |r: &Region| {
        let end = r.range.start + r.range.size;
        if address >= end {
            address - end
        } else {
            r.range.start.saturating_sub(address)
        }
    };
    // A region holding the address first, then the nearest of the program's.
    let Some(r) = ctx.regions.iter().min_by_key(|r| {
        let d = distance(r);
        let holds = (r.range.start..r.range.start + r.range.size).contains(&address);
        (!holds, r.internal, d)
    }) else {
        return "is not inside any allocation (none is live)".to_string();
    };
    let (start, len) = (r.range.start, r.range.size);
    let end = start + len;
    let alloc = format!("the {}-byte allocation {} ({start:#x})", thousands(len), r.name);
    if address >= end {
        format!("is out of bounds: {} bytes after the end of {alloc}", thousands(address - end))
    } else if address < start {
        format!("is out of bounds: {} bytes before {alloc}", thousands(start - address))
    } else if address + u64::from(size) <= end && access != AccessKind::Read {
        format!("is {} bytes into {alloc}, which the kernel may only read", {
            thousands(address - start)
        })
    } else {
        let past = (address + u64::from(size)).saturating_sub(end);
        format!("is {} bytes into {alloc}, but {past} of the access's bytes are past its end", {
            thousands(address - start)
        })
    }
}

/// Where an address nothing has written is: in which allocation, how far in.
fn unwritten_place(ctx: &CheckContext, address: u64) -> String {
    let holder = ctx
        .regions
        .iter()
        .find(|r| (r.range.start..r.range.start + r.range.size).contains(&address));
    match holder {
        Some(r) => format!(
            "is {} bytes into the {}-byte allocation {} ({:#x}), where neither the host nor \
             a kernel has written",
            thousands(address - r.range.start),
            thousands(r.range.size),
            r.name,
            r.range.start
        ),
        None => "is memory neither the host nor a kernel has written".to_string(),
    }
}

/// `4096` as `4,096`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_have_thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(4096), "4,096");
        assert_eq!(thousands(1_048_576), "1,048,576");
    }

    #[test]
    fn the_table_is_sorted_after_its_zero_entry_and_its_shadows_follow() {
        let region = |start, size, internal, shadow| Region {
            range: Range { start, size },
            name: String::new(),
            internal,
            shadow,
        };
        let t = table(&[region(0x2000, 16, true, 0), region(0x1000, 8, false, 0x9000)]);
        let u64_at = |at: usize| u64::from_le_bytes(t[at..at + 8].try_into().expect("8 bytes"));
        assert_eq!(u32::from_le_bytes(t[..4].try_into().expect("4 bytes")), 3);
        assert_eq!((u64_at(16), u64_at(24)), (0, 0));
        assert_eq!((u64_at(32), u64_at(40)), (0x1000, 0x1008));
        assert_eq!((u64_at(48), u64_at(56)), (0x2000, 0x2010 | system::TABLE_READ_ONLY));
        assert_eq!([u64_at(64), u64_at(72), u64_at(80)], [0, 0x9000, 0]);
        assert_eq!(t.len(), 88);
    }
}
