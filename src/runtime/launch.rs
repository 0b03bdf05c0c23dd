//! Launches of a module's kernels: arguments checked against the parameters, the
//! launch prepared (refusals, limits, the system area), enqueued and waited for.

use std::sync::Arc;

use ptxvk_frontend::ast::ScalarType;
use ptxvk_spirv::KernelInfo;
use ptxvk_vk::{LaunchConfig, Stream};

use crate::check::{CheckContext, Region};
use crate::Error;
use ptxvk_abi::system;
use ptxvk_lower::pass::check::Mode;

use super::prepared::Prepared;
use super::system_area::SystemArea;
use super::{device_launch, Arg, Kernel, LaunchStats};

/// Grid and block dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim3(pub [u32; 3]);

impl From<u32> for Dim3 {
    fn from(x: u32) -> Dim3 {
        Dim3([x, 1, 1])
    }
}
impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Dim3 {
        Dim3([x, y, 1])
    }
}
impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Dim3 {
        Dim3([x, y, z])
    }
}
impl From<[u32; 3]> for Dim3 {
    fn from(d: [u32; 3]) -> Dim3 {
        Dim3(d)
    }
}

/// The most phases of a kernel cut at its grid barriers recorded in one go
/// ([`Kernel::more_phases`]): a phase after every thread is done costs a dispatch in
/// which each thread reads its slot and ends.
const MAX_PHASES_AT_ONCE: u32 = 256;

impl<'m> Kernel<'m> {
    pub fn info(&self) -> &'m KernelInfo {
        self.code.info()
    }

    /// Lays out `args` in the kernel's parameter block, checking each against its
    /// parameter's size.
    pub fn param_block(&self, args: &[Arg<'_>]) -> Result<Vec<u8>, Error> {
        let info = self.info();
        let params = &info.abi.params;
        if args.len() != params.len() {
            return Err(Error::Launch(format!(
                "kernel `{}` takes {} argument(s), {} given",
                info.name,
                params.len(),
                args.len()
            )));
        }
        let mut block = vec![0u8; info.abi.size as usize];
        let not_a_pointer = |i: usize, bits: u32| {
            let p = &params[i];
            Error::Launch(format!(
                "argument {i} of `{}` is a buffer, but parameter `{}` is {} ({} bytes), not a {bits}-bit pointer",
                info.name,
                p.name,
                describe(p.elem, p.count),
                p.size
            ))
        };
        for (i, (arg, p)) in args.iter().zip(params).enumerate() {
            let pointer;
            let pointer32;
            let bytes: &[u8] = match arg {
                // A module with 32-bit addresses takes the buffer's offset in the
                // address window (`Device::address_window`).
                Arg::Pointer { buffer, offset } if info.address_size == 32 => {
                    let address = buffer.address() + offset;
                    let window = self.module.window.as_ref();
                    // The whole buffer, not only the address: a buffer allocated
                    // outside may start right at the window's end (mmap places the
                    // window just below earlier allocations), where an address alone
                    // would pass as one past the window's last byte.
                    let inside =
                        |w: &&ptxvk_vk::Window| w.contains(buffer.address(), buffer.size());
                    let Some(w) = window.filter(inside) else {
                        return Err(Error::Launch(format!(
                            "argument {i} of `{}` is a buffer outside the 32-bit address window: \
                             a module with 32-bit addresses takes buffers allocated after it \
                             was loaded",
                            info.name
                        )));
                    };
                    if p.size != 4 || p.count != 1 {
                        return Err(not_a_pointer(i, 32));
                    }
                    pointer32 = ((address - w.base()) as u32).to_le_bytes();
                    &pointer32
                }
                Arg::Pointer { buffer, offset } => {
                    if p.size != 8 || p.count != 1 {
                        return Err(not_a_pointer(i, 64));
                    }
                    pointer = (buffer.address() + offset).to_le_bytes();
                    &pointer
                }
                Arg::Bytes(b) => b,
            };
            if bytes.len() != p.size as usize {
                return Err(Error::Launch(format!(
                    "argument {i} of `{}` has {} byte(s), but parameter `{}` is {} ({} bytes)",
                    info.name,
                    bytes.len(),
                    p.name,
                    describe(p.elem, p.count),
                    p.size
                )));
            }
            let off = p.offset as usize;
            block[off..off + bytes.len()].copy_from_slice(bytes);
        }
        Ok(block)
    }

    /// Launches the kernel on the default stream and waits for it: `grid` blocks of
    /// `block` threads, with `shared_bytes` of dynamic (`extern .shared`) memory.
    /// `kernel_ms` of the result is 0: [`Kernel::launch_timed`] measures it.
    pub fn launch(
        &self,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_bytes: u32,
        args: &[Arg<'_>],
    ) -> Result<LaunchStats, Error> {
        self.launch_and_wait(grid.into().0, block.into().0, shared_bytes, args, false)
    }

    /// [`Kernel::launch`], also measuring the kernel's GPU time with timestamps (slower:
    /// on lavapipe a timestamp waits for all earlier work).
    pub fn launch_timed(
        &self,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_bytes: u32,
        args: &[Arg<'_>],
    ) -> Result<LaunchStats, Error> {
        self.launch_and_wait(grid.into().0, block.into().0, shared_bytes, args, true)
    }

    pub(super) fn launch_and_wait(
        &self,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        args: &[Arg<'_>],
        timed: bool,
    ) -> Result<LaunchStats, Error> {
        let stream = self.module.device.default_stream();
        if self.launches_kernels() {
            let keep = Prepared::arguments(args);
            let run = device_launch::TreeRun { stream: &stream, timed, print: false, keep };
            return self.run_tree(&run, grid, block, shared_bytes, self.param_block(args)?);
        }
        let prepared = self.prepare(grid, block, shared_bytes, self.param_block(args)?)?;
        let keep = prepared.keep(args);
        let keep: Vec<&ptxvk_vk::Buffer> = keep.iter().collect();
        // Kernels with a system area find their parameters in it.
        let params = prepared.system.is_none().then_some(prepared.params.as_slice());
        let stats = stream.launch_and_wait(self.program(), &prepared.cfg, params, &keep, timed)?;
        if let Some(area) = &prepared.system {
            self.more_phases(&stream, &prepared.cfg, area, &keep)?;
        }
        let mut stats = LaunchStats {
            kernel_ms: stats.kernel_ms,
            dispatches: stats.dispatches,
            ..Default::default()
        };
        if let Some(area) = prepared.system {
            let report = area.read()?;
            self.module.system_areas_return(area.buffer);
            stats.printf.clone_from(&report.printf);
            if let Some(error) = report.error() {
                return Err(error);
            }
        }
        Ok(stats)
    }

    /// Enqueues the kernel on `stream` and returns at once. The buffers named by `args`
    /// stay alive until the kernel has run. A kernel's `printf` output is printed to
    /// standard output when it completes, and a failed `assert` or `trap` is reported by
    /// the stream's (or the device's) next `synchronize` as [`Error::KernelFailed`], as
    /// CUDA does.
    pub fn launch_on(
        &self,
        stream: &Stream,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_bytes: u32,
        args: &[Arg<'_>],
    ) -> Result<(), Error> {
        let (grid, block) = (grid.into().0, block.into().0);
        if self.launches_kernels() {
            let keep = Prepared::arguments(args);
            let run = device_launch::TreeRun { stream, timed: false, print: true, keep };
            self.run_tree(&run, grid, block, shared_bytes, self.param_block(args)?)?;
            return Ok(());
        }
        let prepared = self.prepare(grid, block, shared_bytes, self.param_block(args)?)?;
        let keep = prepared.keep(args);
        self.enqueue(stream, prepared, &keep)
    }

    /// [`Kernel::launch_on`] with a parameter block laid out by the caller (CUDA's
    /// `kernelParams` or `extra` forms): `params` must be exactly the kernel's
    /// parameter-block size. Buffers the block points to are not known to the launch: pass
    /// them in `keep` to keep them alive until it has run.
    pub fn launch_params_on(
        &self,
        stream: &Stream,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_bytes: u32,
        params: Vec<u8>,
        keep: &[ptxvk_vk::Buffer],
    ) -> Result<(), Error> {
        let size = self.info().abi.size as usize;
        if params.len() != size {
            return Err(Error::Launch(format!(
                "kernel `{}` has a parameter block of {size} bytes, {} given",
                self.info().name,
                params.len()
            )));
        }
        let (grid, block) = (grid.into().0, block.into().0);
        if self.launches_kernels() {
            let run =
                device_launch::TreeRun { stream, timed: false, print: true, keep: keep.to_vec() };
            self.run_tree(&run, grid, block, shared_bytes, params)?;
            return Ok(());
        }
        let prepared = self.prepare(grid, block, shared_bytes, params)?;
        let mut all = prepared.keep(&[]);
        all.extend(keep.iter().cloned());
        self.enqueue(stream, prepared, &all)
    }

    pub(super) fn enqueue(
        &self,
        stream: &Stream,
        prepared: Prepared<'_>,
        keep: &[ptxvk_vk::Buffer],
    ) -> Result<(), Error> {
        let keep: Vec<&ptxvk_vk::Buffer> = keep.iter().collect();
        match prepared.system {
            None => {
                stream.launch_with_params(self.program(), &prepared.cfg, &prepared.params, &keep)?
            }
            Some(area) => {
                stream.launch(self.program(), &prepared.cfg, &keep)?;
                if self.info().grid_phases.is_some_and(|g| g.in_loop) {
                    self.more_phases(stream, &prepared.cfg, &area, &keep)?;
                }
                let areas = Arc::clone(&self.module.system_areas);
                stream.on_complete(Box::new(move || {
                    let report = area.read();
                    super::system_area::pool_system_area(&areas, area.buffer);
                    let report = report.map_err(|e| ptxvk_vk::Error::Deferred(Box::new(e)))?;
                    print!("{}", report.printf);
                    match report.error() {
                        Some(error) => Err(ptxvk_vk::Error::Deferred(Box::new(error))),
                        None => Ok(()),
                    }
                }))?;
            }
        }
        Ok(())
    }

    /// For a kernel with a grid barrier inside a loop, whose number of phases is known
    /// only at run time: waits for the launch and dispatches more phases (twice as many
    /// each time) while threads are left suspended at a grid barrier. This launch waits,
    /// also when enqueued on a stream, as one that launches kernels does. The device's
    /// timeout bounds all the phases together, as it bounds any other launch: a grid
    /// barrier in a loop that never ends fails with [`ptxvk_vk::Error::Timeout`] rather
    /// than dispatching phases for ever.
    fn more_phases(
        &self,
        stream: &Stream,
        cfg: &LaunchConfig,
        area: &SystemArea,
        keep: &[&ptxvk_vk::Buffer],
    ) -> Result<(), Error> {
        if !self.info().grid_phases.is_some_and(|g| g.in_loop) {
            return Ok(());
        }
        let mut cfg = *cfg;
        let timeout = self.module.device.inner.timeout();
        let deadline = std::time::Instant::now() + timeout;
        loop {
            stream.synchronize()?;
            if !area.needs_phases()? {
                return Ok(());
            }
            if std::time::Instant::now() > deadline {
                let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
                return Err(ptxvk_vk::Error::Timeout { ms }.into());
            }
            cfg.phases = cfg.phases.saturating_mul(2).min(MAX_PHASES_AT_ONCE);
            stream.launch(self.program(), &cfg, keep)?;
        }
    }

    /// Creates the pipeline a launch of `block` threads with `shared_bytes` of dynamic
    /// shared memory would use, without launching: what that launch would wait for
    /// first (on lavapipe, LLVM's compile of the shader; `benches/first_launch.rs`).
    pub fn prepare_pipeline(&self, block: impl Into<Dim3>, shared_bytes: u32) -> Result<(), Error> {
        let params = vec![0; self.info().abi.size as usize];
        let prepared = self.prepare([1, 1, 1], block.into().0, shared_bytes, params)?;
        let made = self.module.device.inner.prepare_pipeline(self.program(), &prepared.cfg);
        if let Some(area) = prepared.system {
            self.module.system_areas_return(area.buffer);
        }
        Ok(made?)
    }

    pub(super) fn program(&self) -> &'m ptxvk_vk::Program {
        &self.code.program
    }

    /// Checks the launch shape against the kernel and lays out its parameters (and, for
    /// kernels with a system area, fills one).
    pub(super) fn prepare(
        &self,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        params: Vec<u8>,
    ) -> Result<Prepared<'m>, Error> {
        self.prepare_with(grid, block, shared_bytes, params, None)
    }

    /// [`Self::prepare`]; a checked launch may also access `arena` (the launch arena of
    /// a kernel that launches kernels, `device_launch`).
    pub(super) fn prepare_with(
        &self,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        params: Vec<u8>,
        arena: Option<&ptxvk_vk::Buffer>,
    ) -> Result<Prepared<'m>, Error> {
        let info = self.info();
        if let Some(refused) = self.module.device.refusal(&self.code.unit.spirv) {
            return Err(refused);
        }
        if let Some(req) = info.reqntid {
            if block != req {
                return Err(Error::Launch(format!(
                    "kernel `{}` requires block size {:?} (.reqntid), got {:?}",
                    info.name, req, block
                )));
            }
        }
        if let Some(max) = info.maxntid {
            let n = |d: [u32; 3]| d.iter().map(|&x| x as u64).product::<u64>();
            if n(block) > n(max) {
                return Err(Error::Launch(format!(
                    "kernel `{}` allows at most {} threads per block (.maxntid), got {}",
                    info.name,
                    n(max),
                    n(block)
                )));
            }
        }
        let total_shared = if shared_bytes > 0 {
            info.dynamic_shared_offset
                .checked_add(shared_bytes)
                .ok_or_else(|| Error::Launch("shared memory size overflows".into()))?
        } else {
            info.static_shared_bytes
        };
        if info.race_shadow {
            self.racecheck_fits(total_shared)?;
        }
        let module = self.module;
        let mut cfg = LaunchConfig {
            grid,
            block,
            shared_bytes: total_shared,
            dynamic_shared_bytes: shared_bytes,
            param_address: 0,
            const_address: module.data.as_ref().map_or(0, |b| b.address()),
            window_base: module.window.as_ref().map_or(0, |w| w.base()),
            shared_in_device_memory: info.shared_in_device_memory,
            confined_outside: false,
            // A kernel cut at its grid barriers: one phase more than it has barriers
            // (`ptxvk_lower::pass::split_grid`); inside a loop, more as they are needed.
            phases: info.grid_phases.map_or(1, |g| g.barriers.saturating_add(1)),
        };
        let vk = &module.device.inner;
        // The table is the one the kernel's code tests against: the module's target
        // decides (`pass::check::Mode::of`), not the device's own check setting, which
        // a module compiled for another target (`Module::from_compiled`) need not share.
        let target = &self.code.unit.target;
        let confinement = match Mode::of(target) {
            Some(Mode::Confine) if !info.check_sites.is_empty() => {
                Some(vk.confinement().ok_or_else(|| {
                    Error::Launch(format!(
                        "kernel `{}` was compiled for confinement, which {} does not do",
                        info.name,
                        module.device.info().name
                    ))
                })?)
            }
            _ => None,
        };
        // Initcheck code finds no shadow for an allocation made while the device did
        // not track writes, and counts it as written (`ptxvk_vk`'s `shadow.rs`): on a
        // device that tracks none, it would check nothing.
        if target.initcheck && !info.check_sites.is_empty() && !vk.tracks_writes() {
            return Err(Error::Launch(format!(
                "kernel `{}` was compiled for initcheck, but {} does not track writes to its \
                 allocations (set PTXVK_CHECK=initcheck, or `Device::set_check` with \
                 initcheck, before allocating)",
                info.name,
                module.device.info().name
            )));
        }
        let check = (!info.check_sites.is_empty()).then(|| {
            let dynamic =
                if shared_bytes > 0 { total_shared - info.dynamic_shared_offset } else { 0 };
            // Memcheck names every allocation; confinement lists only those outside
            // the range, which its kernels test against the table, and passes the
            // range as the first parameter range (`ptxvk_lower::pass::check`,
            // *Confinement*).
            let mut regions = match confinement {
                Some(_) => self.regions_outside_confinement(),
                None => self.regions(&params, target.initcheck),
            };
            regions.extend(arena.map(|a| Region {
                range: ptxvk_vk::Range { start: a.address(), size: a.size() },
                name: "holding the device-side launches' parameter buffers".to_string(),
                // The kernel writes its parameter buffers there.
                internal: false,
                shadow: 0,
            }));
            Box::new(CheckContext {
                kernel: info.name.clone(),
                sites: info.check_sites.clone(),
                sources: self
                    .code
                    .unit
                    .check_sources
                    .get(self.code.at)
                    .cloned()
                    .unwrap_or_default(),
                param_ranges: match confinement {
                    Some(r) => confined_ranges(r, &regions),
                    None => self.param_ranges(&params, &regions),
                },
                regions,
                freed: if confinement.is_some() { Vec::new() } else { vk.freed_allocations() },
                confinement,
                shared: (total_shared - dynamic, dynamic),
                local_bytes: info.local_bytes,
                param_bytes: info.abi.size,
                limit: module.device.check().limit,
                block,
            })
        });
        // A confined launch with nothing outside the range keeps no test against it.
        cfg.confined_outside = check.as_ref().is_some_and(|c| {
            c.confinement.is_some() && c.param_ranges.iter().skip(1).any(|&(s, e, _)| s != e)
        });
        let system = if info.system {
            let grid_save = info.grid_phases.map(|g| {
                let n = |d: [u32; 3]| d.iter().map(|&x| u64::from(x)).product::<u64>();
                let record = u64::from(g.record_bytes);
                system::GridSave::new(n(grid), n(block), u64::from(total_shared), record)
            });
            let area = module.system_area(self.code, &params, check, grid_save)?;
            cfg.param_address = area.buffer.address();
            Some(area)
        } else {
            None
        };
        Ok(Prepared { module, cfg, params, system })
    }

    /// Whether a racechecked launch with `total_shared` bytes of shared memory can keep
    /// its shadow (four words per word) in shared memory too.
    pub(super) fn racecheck_fits(&self, total_shared: u32) -> Result<(), Error> {
        let info = self.module.device.info();
        let words = u64::from(ptxvk_vk::abi::shared_words(total_shared));
        let needed = u64::from(total_shared) + 16 * words;
        let max = u64::from(info.limits.max_shared_memory_bytes);
        if needed > max {
            return Err(Error::Launch(format!(
                "racecheck keeps a shadow of 16 bytes per 4 bytes of shared memory: kernel \
                 `{}`'s {total_shared} bytes need {needed} bytes in all, more than the \
                 device's {max} (maxComputeSharedMemorySize); run it with memcheck only",
                self.info().name
            )));
        }
        Ok(())
    }

    /// The pointer-sized parameters of the launch with parameter block `params`: their
    /// index and value as a device address (a window offset made one).
    pub(super) fn pointer_arguments(&self, params: &[u8]) -> Vec<(usize, u64)> {
        let info = self.info();
        let pointer_bytes = if info.address_size == 32 { 4 } else { 8 };
        let window = self.module.window.as_ref().map_or(0, |w| w.base());
        info.abi
            .params
            .iter()
            .enumerate()
            .filter(|(_, p)| p.size == pointer_bytes && p.count == 1)
            .filter_map(|(i, p)| {
                let at = p.offset as usize;
                let bytes = params.get(at..at + pointer_bytes as usize)?;
                let mut value = [0u8; 8];
                value[..bytes.len()].copy_from_slice(bytes);
                let value = u64::from_le_bytes(value);
                Some((i, if pointer_bytes == 4 { window + value } else { value }))
            })
            .collect()
    }

    /// Per parameter, the allocation its pointer value points into, or (0, 0).
    pub(super) fn param_ranges(&self, params: &[u8], regions: &[Region]) -> Vec<(u64, u64, u64)> {
        let mut ranges = vec![(0, 0, 0); self.info().abi.params.len()];
        for (i, value) in self.pointer_arguments(params) {
            let holder = regions
                .iter()
                .find(|r| (r.range.start..r.range.start + r.range.size).contains(&value));
            if let Some(r) = holder {
                ranges[i] = (r.range.start, r.range.start + r.range.size, r.shadow);
            }
        }
        ranges
    }

    /// What a confined launch may access outside the device's confinement range:
    /// registered host memory and memory imported from another process.
    fn regions_outside_confinement(&self) -> Vec<Region> {
        let vk = &self.module.device.inner;
        vk.allocations_outside_confinement()
            .into_iter()
            .map(|range| Region {
                range,
                name: "outside the confinement range (registered or imported)".to_string(),
                internal: false,
                shadow: 0,
            })
            .collect()
    }

    /// What a checked launch with parameter block `params` may access, named for its
    /// report: every live allocation (the parameter block is added with its buffer),
    /// with its write shadow where the kernel was compiled with `initcheck`.
    pub(super) fn regions(&self, params: &[u8], initcheck: bool) -> Vec<Region> {
        let module = self.module;
        let arguments = self.pointer_arguments(params);
        let data = module.data.as_ref().map(|b| b.address());
        let heap = module.heap.get().map(|b| b.address());
        let vk = &module.device.inner;
        vk.live_allocations()
            .into_iter()
            .map(|range| {
                let inside = |a: u64| (range.start..range.start + range.size.max(1)).contains(&a);
                let name = if let Some((i, _)) = arguments.iter().find(|(_, a)| inside(*a)) {
                    format!("passed as argument {i}")
                } else if data == Some(range.start) {
                    "of the module's `.global`/`.const` variables".to_string()
                } else if heap == Some(range.start) {
                    "of the device heap (`malloc`)".to_string()
                } else {
                    "not passed to this launch".to_string()
                };
                let shadow = if initcheck { vk.shadow_of(range.start) } else { 0 };
                Region { range, name, internal: false, shadow }
            })
            .collect()
    }
}

/// The parameter ranges of a confined launch (`ptxvk_abi::system`): the confinement
/// range, then [`system::CONFINED_OUTSIDE`] ranges holding the allocations outside it
/// that `regions` lists; where there are more, the two closest become one range with
/// the gap between them, until they fit. Unused slots are empty.
fn confined_ranges(range: ptxvk_vk::Range, regions: &[Region]) -> Vec<(u64, u64, u64)> {
    let end_of_range = range.start + range.size;
    let mut outside: Vec<(u64, u64)> = regions
        .iter()
        .map(|r| (r.range.start, r.range.start + r.range.size))
        .filter(|&(start, end)| end <= range.start || start >= end_of_range)
        .collect();
    outside.sort_unstable();
    while outside.len() > system::CONFINED_OUTSIDE as usize {
        let closest = (1..outside.len())
            .min_by_key(|&i| outside[i].0.saturating_sub(outside[i - 1].1))
            .unwrap_or(1);
        let (_, end) = outside.remove(closest);
        let merged = &mut outside[closest - 1].1;
        *merged = (*merged).max(end);
    }
    outside.resize(system::CONFINED_OUTSIDE as usize, (0, 0));
    std::iter::once((range.start, range.start + range.size))
        .chain(outside)
        .map(|(start, end)| (start, end, 0))
        .collect()
}

pub(super) fn describe(elem: ScalarType, count: u32) -> String {
    if count == 1 {
        format!("`{}`", elem.directive())
    } else {
        format!("`{}[{count}]`", elem.directive())
    }
}

#[cfg(test)]
mod tests {
    use super::confined_ranges;
    use crate::check::Region;
    use ptxvk_vk::Range;

    fn region(start: u64, size: u64) -> Region {
        Region { range: Range { start, size }, name: String::new(), internal: false, shadow: 0 }
    }

    #[test]
    fn confined_ranges_merge_the_closest_allocations_outside_the_range() {
        let range = Range { start: 1 << 40, size: 1 << 30 };
        // Six outside, one inside (the arena): the two pairs with the smallest gaps merge.
        let regions = [
            region(100, 10),
            region(120, 10),
            region(1000, 10),
            region(5000, 10),
            region(5015, 5),
            region(90_000, 10),
            region((1 << 40) + 4096, 64),
        ];
        let got = confined_ranges(range, &regions);
        let want = [
            (1 << 40, (1 << 40) + (1 << 30), 0),
            (100, 130, 0),
            (1000, 1010, 0),
            (5000, 5020, 0),
            (90_000, 90_010, 0),
        ];
        assert_eq!(got, want);
        // None outside: the range, then empty slots.
        let got = confined_ranges(range, &[]);
        assert_eq!(got.len(), 5);
        assert!(got[1..].iter().all(|&r| r == (0, 0, 0)));
    }
}
