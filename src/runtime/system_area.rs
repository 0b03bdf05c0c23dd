//! Readback: a launch's system area (after its parameter block), filled before the
//! launch and read after it for traps, assertions, `printf` and check reports.

use std::sync::{Arc, Mutex, PoisonError};

use ptxvk_abi::system;

use crate::check::{CheckContext, Region};
use crate::printf;
use crate::Error;

use super::module::Code;
use super::Module;

/// A launch's parameter block followed by its system area (traps, assertions, printf),
/// in host memory.
pub(super) struct SystemArea {
    pub(super) buffer: ptxvk_vk::Buffer,
    /// Offset of the system area (after the parameter block).
    pub(super) offset: u32,
    pub(super) kernel: String,
    pub(super) strings: Arc<Vec<u8>>,
    pub(super) data_base: u64,
    /// A checked launch's context for its report.
    pub(super) check: Option<Box<CheckContext>>,
    /// Where the kernel's guarded loops are, for a loop-limit failure.
    pub(super) loops: Vec<crate::check::SiteSource>,
    /// Where the kernel's wait sites are, for a stuck block's failure.
    pub(super) waits: Vec<crate::check::SiteSource>,
    /// The offset of the grid save area of a kernel cut into phases at its grid
    /// barriers (`ptxvk_abi::system::GridSave`).
    pub(super) grid_save: Option<u64>,
}

/// What a system area reported.
pub(super) struct SystemReport {
    pub(super) printf: String,
    pub(super) failure: Option<String>,
    /// A checked launch's report of the accesses it refused.
    pub(super) violations: Option<crate::check::CheckReport>,
}

impl SystemReport {
    /// The error the launch fails with, if any: a refused access comes first, since
    /// what follows it (a trap, say) may be its consequence.
    pub(super) fn error(self) -> Option<Error> {
        let output = self.printf;
        match (self.violations, self.failure) {
            (Some(report), _) => Some(Error::CheckFailed { report: Box::new(report), output }),
            (None, Some(message)) => Some(Error::KernelFailed { message, output }),
            (None, None) => None,
        }
    }
}

impl SystemArea {
    /// Decodes the area after the launch completed.
    pub(super) fn read(&self) -> Result<SystemReport, Error> {
        let mut area = vec![0u8; system::HEADER as usize];
        self.buffer.read_mapped(u64::from(self.offset), &mut area)?;
        let at = system::PRINTF_USED as usize;
        let used =
            area.get(at..at + 4).and_then(|b| b.try_into().ok()).map_or(0, u32::from_le_bytes);
        let records = used.min(system::PRINTF_CAPACITY) as usize;
        if records > 0 {
            let start = area.len();
            area.resize(start + records, 0);
            self.buffer.read_mapped(u64::from(self.offset + system::HEADER), &mut area[start..])?;
        }
        let report = system::decode(&area);
        let strings = printf::Strings { image: &self.strings, base: self.data_base };
        let violations = match &self.check {
            Some(check) => self.violations(check)?,
            None => None,
        };
        Ok(SystemReport {
            printf: printf::output(&report, &strings),
            failure: report.failure.map(|f| {
                printf::failure_message(&self.kernel, &f, &strings, &self.loops, &self.waits)
            }),
            violations,
        })
    }

    /// Whether a launch cut into phases needs more of them: threads are suspended at a
    /// grid barrier and the launch has not failed.
    pub(super) fn needs_phases(&self) -> Result<bool, Error> {
        let Some(at) = self.grid_save else { return Ok(false) };
        let mut word = [0u8; 4];
        self.buffer.read_mapped(u64::from(self.offset + system::STATUS), &mut word)?;
        if u32::from_le_bytes(word) != 0 {
            return Ok(false);
        }
        self.buffer.read_mapped(at + u64::from(system::GRID_SUSPENDED), &mut word)?;
        Ok(u32::from_le_bytes(word) != 0)
    }

    /// The report of the accesses a checked launch refused, if it refused any.
    pub(super) fn violations(
        &self,
        check: &CheckContext,
    ) -> Result<Option<crate::check::CheckReport>, Error> {
        // The violation count, then the record count (`ptxvk_abi::system`).
        const _: () = assert!(system::CHECK_SLOTS == system::CHECK_COUNT + 4);
        let mut counts = [0u8; 8];
        self.buffer.read_mapped(u64::from(self.offset + system::CHECK_COUNT), &mut counts)?;
        let [c0, c1, c2, c3, s0, s1, s2, s3] = counts;
        if u32::from_le_bytes([c0, c1, c2, c3]) == 0 {
            return Ok(None);
        }
        let kept = u32::from_le_bytes([s0, s1, s2, s3]).min(system::CHECK_CAPACITY);
        let end = system::CHECK_RECORDS + kept * system::CHECK_RECORD;
        let mut area = vec![0u8; end as usize];
        self.buffer.read_mapped(u64::from(self.offset), &mut area)?;
        let (count, records) = system::decode_violations(&area);
        Ok(crate::check::report(check, count, &records))
    }
}

impl Module {
    /// A system area holding `params`, its header zeroed but for the heap address; for
    /// a checked launch, with its allocation table (the parameter block added); for a
    /// kernel cut into phases, with its grid save area (`grid_save`) after all that.
    pub(super) fn system_area(
        &self,
        code: &Code,
        params: &[u8],
        mut check: Option<Box<CheckContext>>,
        grid_save: Option<system::GridSave>,
    ) -> Result<SystemArea, Error> {
        let kernel = &code.info().name;
        let offset = system::offset(params.len() as u32);
        // A checked launch's table goes after its records; it lists the regions and
        // the parameter block (one more entry).
        let table_at = offset + system::CHECKED_SIZE;
        let table_bytes = check.as_ref().map_or(0, |c| {
            // The regions, the parameter block, the grid workspace, the (0, 0) entry.
            let own = 2 + u64::from(code.info().grid_sync);
            16 + 24 * (c.regions.len() as u64 + own) + 24 * c.param_ranges.len() as u64
        });
        let size = if check.is_some() {
            u64::from(table_at) + table_bytes
        } else {
            u64::from(offset + system::SIZE)
        };
        let save_at = size.next_multiple_of(8);
        let size = save_at + grid_save.map_or(0, |g| g.size);
        let reused = {
            let mut areas = self.system_areas.lock().unwrap_or_else(PoisonError::into_inner);
            areas.iter().position(|b| b.size() >= size).map(|i| areas.swap_remove(i))
        };
        let buffer = match reused {
            Some(b) => b,
            None => {
                let b = self.device.inner.alloc_host(size)?;
                b.set_internal();
                b
            }
        };
        let mut head = params.to_vec();
        head.resize((offset + system::HEADER) as usize, 0);
        let heap = self.heap.get().map_or(0, |h| h.address());
        let at = (offset + system::HEAP) as usize;
        head[at..at + 8].copy_from_slice(&heap.to_le_bytes());
        if let Some(check) = check.as_mut() {
            check.regions.push(Region {
                range: ptxvk_vk::Range { start: buffer.address(), size: params.len() as u64 },
                name: "holding the kernel's parameters".to_string(),
                internal: true,
                shadow: 0,
            });
            // The inline grid barrier of cooperative groups counts arrivals in the
            // workspace `%envreg1/2` point at, in this area's header: the kernel writes it.
            if code.info().grid_sync {
                let start = buffer.address() + u64::from(offset + system::GRID_WORKSPACE);
                check.regions.push(Region {
                    range: ptxvk_vk::Range { start, size: 8 },
                    name: "of the grid workspace (cooperative groups' grid barrier)".to_string(),
                    internal: false,
                    shadow: 0,
                });
            }
            let table = crate::check::table(&check.regions);
            buffer.write_mapped(u64::from(table_at), &table)?;
            let at = (offset + system::CHECK_TABLE) as usize;
            let address = buffer.address() + u64::from(table_at);
            head[at..at + 8].copy_from_slice(&address.to_le_bytes());
            // The parameter ranges follow the table.
            let ranges_at = u64::from(table_at) + table.len() as u64;
            // The parameter ranges, then their shadows (`ptxvk_abi::system`).
            let ranges: Vec<u8> = check
                .param_ranges
                .iter()
                .flat_map(|(s, e, _)| s.to_le_bytes().into_iter().chain(e.to_le_bytes()))
                .chain(check.param_ranges.iter().flat_map(|(_, _, shadow)| shadow.to_le_bytes()))
                .collect();
            let at = (offset + system::ALL_WRITTEN) as usize;
            head[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
            buffer.write_mapped(ranges_at, &ranges)?;
            let at = (offset + system::CHECK_PARAMS) as usize;
            let address = buffer.address() + ranges_at;
            head[at..at + 8].copy_from_slice(&address.to_le_bytes());
        }
        if let Some(g) = grid_save {
            let at = (offset + system::GRID_SAVE) as usize;
            head[at..at + 8].copy_from_slice(&(buffer.address() + save_at).to_le_bytes());
            // The counts, block words and slots start at 0.
            let mut control = vec![0u8; g.data as usize];
            control[..system::GRID_BLOCK_WORDS as usize].copy_from_slice(&g.header());
            buffer.write_mapped(save_at, &control)?;
        }
        // The buffer is ours alone: fresh, or returned after its launch completed.
        buffer.write_mapped(0, &head)?;
        Ok(SystemArea {
            buffer,
            offset,
            kernel: kernel.to_owned(),
            strings: Arc::clone(&self.strings),
            data_base: self.data.as_ref().map_or(0, |b| b.address()),
            check,
            loops: code.unit.loop_sources.get(code.at).cloned().unwrap_or_default(),
            waits: code.unit.wait_sources.get(code.at).cloned().unwrap_or_default(),
            grid_save: grid_save.map(|_| save_at),
        })
    }

    pub(super) fn system_areas_return(&self, buffer: ptxvk_vk::Buffer) {
        pool_system_area(&self.system_areas, buffer);
    }
}

/// How many free system areas a module keeps for later launches. A burst of enqueued
/// launches needs one area each while in flight; keeping them all afterwards held the
/// burst's peak for the module's lifetime (the driver library's soak grew by tens of
/// MiB per million calls under confinement, where every launch has an area).
const POOLED_SYSTEM_AREAS: usize = 128;
/// The largest system area a module keeps for later launches.
const POOLED_AREA_BYTES: u64 = 4 << 20;

/// Returns a launch's system area to its module's pool (`areas`), or frees it when the
/// pool is full.
pub(super) fn pool_system_area(areas: &Mutex<Vec<ptxvk_vk::Buffer>>, buffer: ptxvk_vk::Buffer) {
    let mut areas = areas.lock().unwrap_or_else(PoisonError::into_inner);
    // An area with a large grid save area (`system::GridSave`) is freed, not kept.
    if areas.len() < POOLED_SYSTEM_AREAS && buffer.size() <= POOLED_AREA_BYTES {
        areas.push(buffer);
    }
}
