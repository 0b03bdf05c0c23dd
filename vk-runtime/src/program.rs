//! Programs: a SPIR-V shader module, its pipeline layout, and the compute pipelines built
//! from it — one per (block size, shared-memory words), created on first use.
//!
//! The pipeline layout has no descriptor sets and one push-constant range of
//! [`PUSH_CONSTANT_SIZE`](crate::PUSH_CONSTANT_SIZE) bytes for the compute stage. Block size
//! and shared-memory size reach the shader as specialization constants 0-3 (see the crate
//! docs), so one module serves every launch shape; the device's `VkPipelineCache` makes
//! re-creating a pipeline that was built before (in this or an earlier process) cheap.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::CString;
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};

use ash::vk;

use crate::conv;
use crate::error::Error;
use crate::launch_config::{validate, LaunchConfig};
use crate::objects::{Device, DeviceShared, Gpu};
use crate::types::{Features, PipelineKey, SubgroupSizes};

/// A compiled kernel ready to launch: shader module, pipeline layout and its pipelines.
///
/// Cheap to clone. Destroyed when the last handle is dropped and no pending launch uses
/// it (launches keep a handle until they complete).
#[derive(Clone)]
pub struct Program {
    pub(crate) inner: Arc<ProgramInner>,
}

/// The shared part of a [`Program`].
pub(crate) struct ProgramInner {
    gpu: Arc<Gpu>,
    pub(crate) device_id: u64,
    module: vk::ShaderModule,
    pub(crate) layout: vk::PipelineLayout,
    entry: CString,
    needs: Features,
    /// The subgroup size every pipeline requires, with what the device allows.
    subgroups: Option<(u32, SubgroupSizes)>,
    device_name: String,
    pipelines: Mutex<BTreeMap<PipelineKey, vk::Pipeline>>,
    /// Pipelines created but never dispatched, kept only while `PTXVK_LOG=timing` is on
    /// (`crate::timing`): their first dispatch gets its own line.
    undispatched: Mutex<BTreeSet<PipelineKey>>,
}

impl fmt::Debug for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Program")
            .field("entry", &self.inner.entry)
            .field("needs", &self.inner.needs)
            .field("cached_pipelines", &self.cached_pipelines())
            .finish_non_exhaustive()
    }
}

impl Device {
    /// Creates a program from SPIR-V words and the name of a `GLCompute` entry point.
    ///
    /// Checks `needs` against the device first ([`Error::MissingFeatures`] lists every
    /// missing Vulkan feature name) and that `spirv` is a SPIR-V module with that entry
    /// point. The module itself must be valid for Vulkan 1.3 (`spirv-val --target-env
    /// vulkan1.3`); the backend guarantees that, this function does not re-validate it.
    pub fn create_program(
        &self,
        spirv: &[u32],
        entry: &str,
        needs: &Features,
    ) -> Result<Program, Error> {
        self.create_program_with_subgroup_size(spirv, entry, needs, None)
    }

    /// [`Self::create_program`] whose pipelines run in subgroups of `subgroup_size`
    /// invocations (`VkPipelineShaderStageRequiredSubgroupSizeCreateInfo`, Vulkan 1.3),
    /// full ones where the block's x size is a multiple of it and the device allows
    /// `computeFullSubgroups`: how PTX warps become subgroups of 32 (or 64, two warps
    /// each) on devices that run several sizes. A size the device cannot require is
    /// [`Error::SubgroupSize`].
    pub fn create_program_with_subgroup_size(
        &self,
        spirv: &[u32],
        entry: &str,
        needs: &Features,
        subgroup_size: Option<u32>,
    ) -> Result<Program, Error> {
        let info = &self.shared.info;
        let missing = needs.missing_from(&info.features);
        if !missing.is_empty() {
            return Err(Error::MissingFeatures { device: info.name.clone(), missing });
        }
        let subgroups = match (subgroup_size, info.required_subgroup_sizes) {
            (None, _) => None,
            (Some(size), Some(sizes)) if sizes.allows(size) => Some((size, sizes)),
            (Some(size), sizes) => {
                let available = match sizes {
                    Some(s) => format!("it can require {} to {}", s.min, s.max),
                    None => format!(
                        "it has no subgroup size control; its subgroups have {}",
                        info.subgroup_size
                    ),
                };
                return Err(Error::SubgroupSize { device: info.name.clone(), size, available });
            }
        };
        let available = compute_entry_points(spirv).map_err(Error::InvalidSpirv)?;
        if !available.iter().any(|name| name == entry) {
            return Err(Error::EntryPointNotFound { entry: entry.to_owned(), available });
        }
        // Names read from the module contain no NUL, and `entry` equals one of them.
        let entry_c = CString::new(entry)
            .map_err(|_| Error::InvalidSpirv("entry point name contains a NUL byte".into()))?;

        let spirv = without_unsupported_float_controls(spirv, &info.features);
        let dev = &self.shared.raw;
        let module_info = vk::ShaderModuleCreateInfo::default().code(&spirv);
        // SAFETY: the device is alive; `spirv` is a SPIR-V module (magic number and
        // instruction framing checked above) that outlives the call.
        let module = unsafe { dev.create_shader_module(&module_info, None) }
            .map_err(Error::vk("vkCreateShaderModule"))?;

        let ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
            .offset(0)
            .size(crate::PUSH_CONSTANT_SIZE)];
        let layout_info = vk::PipelineLayoutCreateInfo::default().push_constant_ranges(&ranges);
        // SAFETY: the device is alive; the range fits maxPushConstantsSize (checked when the
        // device was selected).
        let layout = match unsafe { dev.create_pipeline_layout(&layout_info, None) } {
            Ok(layout) => layout,
            Err(result) => {
                // SAFETY: the module was just created and is used by nothing.
                unsafe { dev.destroy_shader_module(module, None) };
                return Err(Error::Vk { call: "vkCreatePipelineLayout", result });
            }
        };

        Ok(Program {
            inner: Arc::new(ProgramInner {
                gpu: Arc::clone(&self.shared.gpu),
                device_id: self.shared.id,
                module,
                layout,
                entry: entry_c,
                needs: *needs,
                subgroups,
                device_name: info.name.clone(),
                pipelines: Mutex::new(BTreeMap::new()),
                undispatched: Mutex::new(BTreeSet::new()),
            }),
        })
    }
}

impl Device {
    /// Creates the pipeline a launch of `program` with `cfg` would use, without
    /// launching: what the first launch of that shape waits for (on lavapipe, LLVM's
    /// compile of the shader). Launches of that shape find it made.
    pub fn prepare_pipeline(&self, program: &Program, cfg: &LaunchConfig) -> Result<(), Error> {
        if program.inner.device_id != self.shared.id {
            return Err(Error::ForeignObject("program"));
        }
        validate(cfg, &self.shared.info.limits)?;
        program.inner.pipeline(&self.shared, PipelineKey::of(cfg)).map(drop)
    }
}

impl Program {
    /// The entry point's name.
    pub fn entry(&self) -> &str {
        // Built from a `&str`, so always UTF-8.
        self.inner.entry.to_str().unwrap_or_default()
    }

    /// The features this program was created with.
    pub fn needs(&self) -> &Features {
        &self.inner.needs
    }

    /// How many specialized pipelines exist so far (one per launch shape used).
    pub fn cached_pipelines(&self) -> usize {
        self.inner.pipelines.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

impl ProgramInner {
    /// The pipeline for a block size and shared-memory size, created on first use.
    pub(crate) fn pipeline(
        &self,
        shared: &DeviceShared,
        key: PipelineKey,
    ) -> Result<vk::Pipeline, Error> {
        // A poisoned map is still consistent: entries are inserted only after creation
        // succeeded.
        let mut pipelines = self.pipelines.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(&pipeline) = pipelines.get(&key) {
            return Ok(pipeline);
        }
        let data = conv::spec_data(&key);
        let spec = vk::SpecializationInfo::default().map_entries(&conv::SPEC_MAP).data(&data);
        let mut stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(self.module)
            .name(&self.entry)
            .specialization_info(&spec);
        let mut required = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default();
        if let Some((size, sizes)) = self.subgroups {
            let threads = key.block.iter().product::<u32>();
            // VUID-VkPipelineShaderStageCreateInfo-pNext-02756.
            if threads > size.saturating_mul(sizes.max_per_workgroup) {
                return Err(Error::TooManySubgroups {
                    device: self.device_name.clone(),
                    threads,
                    size,
                    max: sizes.max_per_workgroup,
                });
            }
            required = required.required_subgroup_size(size);
            stage = stage.push_next(&mut required);
            // Full subgroups make the invocation-to-subgroup mapping linear; they need
            // an x size that is a multiple of the subgroup size (VUID-02758).
            if sizes.full_subgroups && key.block[0].is_multiple_of(size) {
                stage = stage.flags(vk::PipelineShaderStageCreateFlags::REQUIRE_FULL_SUBGROUPS);
            }
        }
        let info = [vk::ComputePipelineCreateInfo::default().stage(stage).layout(self.layout)];
        let dev = &self.gpu.raw;
        let since = crate::timing::start();
        // SAFETY: module, layout and pipeline cache are live objects of this device (the
        // caller's `shared` is this program's device: launches check the device id); the
        // entry point exists in the module (checked at creation); the specialization data
        // covers every map entry; everything referenced outlives the call.
        let created = unsafe { dev.create_compute_pipelines(shared.pipeline_cache, &info, None) };
        if since.is_some() {
            let fields = format!(
                "block={:?} shared_words={} dynamic_shared={}",
                key.block, key.shared_words, key.dynamic_shared_bytes
            );
            crate::timing::record(since, "pipeline", &self.entry.to_string_lossy(), &fields);
        }
        let pipeline = match created {
            Ok(list) => list.first().copied(),
            Err((list, result)) => {
                for p in list.into_iter().filter(|&p| p != vk::Pipeline::null()) {
                    // SAFETY: the pipeline was just created and never used.
                    unsafe { dev.destroy_pipeline(p, None) };
                }
                return Err(Error::Vk { call: "vkCreateComputePipelines", result });
            }
        }
        .ok_or(Error::Vk { call: "vkCreateComputePipelines", result: vk::Result::ERROR_UNKNOWN })?;
        shared.pipeline_cache_dirty.store(true, Ordering::Relaxed);
        pipelines.insert(key, pipeline);
        if since.is_some() {
            self.undispatched.lock().unwrap_or_else(PoisonError::into_inner).insert(key);
        }
        Ok(pipeline)
    }

    /// Whether a launch of shape `key` is its pipeline's first dispatch, under
    /// `PTXVK_LOG=timing` (always false without it).
    pub(crate) fn first_dispatch(&self, key: PipelineKey) -> bool {
        crate::timing::enabled()
            && self.undispatched.lock().unwrap_or_else(PoisonError::into_inner).remove(&key)
    }
}

impl Drop for ProgramInner {
    fn drop(&mut self) {
        let dev = &self.gpu.raw;
        let pipelines = self.pipelines.get_mut().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: every pending launch holds a handle to this structure, so no command
        // buffer using these objects is pending; each object is destroyed exactly once
        // (the map is emptied).
        unsafe {
            for (_, pipeline) in std::mem::take(pipelines) {
                dev.destroy_pipeline(pipeline, None);
            }
            dev.destroy_pipeline_layout(self.layout, None);
            dev.destroy_shader_module(self.module, None);
        }
    }
}

const SPIRV_MAGIC: u32 = 0x0723_0203;
const OP_ENTRY_POINT: u32 = 15;
const EXECUTION_MODEL_GLCOMPUTE: u32 = 5;

/// Checks the SPIR-V header and instruction framing, and returns the names of the
/// module's `GLCompute` entry points (SPIR-V §2.3, §2.4).
/// `spirv` without the `SignedZeroInfNanPreserve` execution modes of the float widths
/// the device does not offer the mode for (and without the capability when none is
/// left): such a device keeps no promise about signed zeros, which is its limit, not an
/// invalid module. The module's framing was checked by [`compute_entry_points`].
fn without_unsupported_float_controls<'a>(
    spirv: &'a [u32],
    features: &Features,
) -> std::borrow::Cow<'a, [u32]> {
    const OP_CAPABILITY: u32 = 17;
    const OP_EXECUTION_MODE: u32 = 16;
    const SIGNED_ZERO_INF_NAN_PRESERVE_MODE: u32 = 4461;
    const SIGNED_ZERO_INF_NAN_PRESERVE_CAPABILITY: u32 = 4466;
    let offered = |width: u32| match width {
        32 => features.signed_zero_preserve_f32,
        64 => features.signed_zero_preserve_f64,
        _ => false,
    };
    let mut out = spirv[..5.min(spirv.len())].to_vec();
    let (mut kept_modes, mut removed) = (0, 0);
    let mut i = 5;
    while i < spirv.len() {
        let count = ((spirv[i] >> 16) as usize).max(1);
        let inst = &spirv[i..(i + count).min(spirv.len())];
        let opcode = spirv[i] & 0xffff;
        if opcode == OP_EXECUTION_MODE && inst.get(2) == Some(&SIGNED_ZERO_INF_NAN_PRESERVE_MODE) {
            if inst.get(3).is_some_and(|&w| offered(w)) {
                kept_modes += 1;
            } else {
                removed += 1;
                i += count;
                continue;
            }
        }
        out.extend_from_slice(inst);
        i += count;
    }
    if removed == 0 {
        return std::borrow::Cow::Borrowed(spirv);
    }
    if kept_modes == 0 {
        let capability = [(2 << 16) | OP_CAPABILITY, SIGNED_ZERO_INF_NAN_PRESERVE_CAPABILITY];
        if let Some(at) = out.windows(2).position(|w| w == capability) {
            out.drain(at..at + 2);
        }
    }
    std::borrow::Cow::Owned(out)
}

pub(crate) fn compute_entry_points(words: &[u32]) -> Result<Vec<String>, String> {
    match words.first() {
        None => return Err("the module is empty".into()),
        Some(&SPIRV_MAGIC) => {}
        Some(m) if m.swap_bytes() == SPIRV_MAGIC => {
            return Err("the module has the wrong byte order for this host".into());
        }
        Some(m) => {
            return Err(format!("bad magic number {m:#010x} (expected {SPIRV_MAGIC:#010x})"))
        }
    }
    if words.len() < 5 {
        return Err(format!(
            "the module has {} words, shorter than the 5-word header",
            words.len()
        ));
    }
    let mut names = Vec::new();
    let mut i = 5;
    while i < words.len() {
        let count = (words[i] >> 16) as usize;
        let opcode = words[i] & 0xffff;
        if count == 0 {
            return Err(format!("instruction at word {i} has a word count of 0"));
        }
        let Some(inst) = words.get(i..i + count) else {
            return Err(format!(
                "instruction at word {i} needs {count} words but the module ends after {}",
                words.len() - i
            ));
        };
        if opcode == OP_ENTRY_POINT && count >= 4 && inst[1] == EXECUTION_MODEL_GLCOMPUTE {
            let bytes: Vec<u8> = inst[3..].iter().flat_map(|w| w.to_le_bytes()).collect();
            let len = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            names.push(String::from_utf8_lossy(&bytes[..len]).into_owned());
        }
        i += count;
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_controls_the_device_lacks_are_removed() {
        let header = [SPIRV_MAGIC, 0x0001_0600, 0, 100, 0];
        let capability = [(2 << 16) | 17, 4466];
        let mode = |width: u32| [(4 << 16) | 16, 7, 4461, width];
        let shader_capability = [(2 << 16) | 17, 1];
        let words: Vec<u32> = header
            .iter()
            .chain(&shader_capability)
            .chain(&capability)
            .chain(&mode(32))
            .chain(&mode(64))
            .copied()
            .collect();
        let both = Features {
            signed_zero_preserve_f32: true,
            signed_zero_preserve_f64: true,
            ..Default::default()
        };
        assert_eq!(&*without_unsupported_float_controls(&words, &both), &words[..]);
        let f32_only = Features { signed_zero_preserve_f32: true, ..Default::default() };
        let kept = without_unsupported_float_controls(&words, &f32_only);
        assert_eq!(&kept[..], &words[..words.len() - 4], "the 64-bit mode goes");
        let none = without_unsupported_float_controls(&words, &Features::default());
        let bare: Vec<u32> = header.iter().chain(&shader_capability).copied().collect();
        assert_eq!(&none[..], &bare[..], "modes and capability go");
    }

    fn string_words(s: &str) -> Vec<u32> {
        let mut bytes = s.as_bytes().to_vec();
        bytes.resize(bytes.len() / 4 * 4 + 4, 0);
        bytes.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    }

    fn entry_point(model: u32, name: &str) -> Vec<u32> {
        let name = string_words(name);
        let count = 3 + name.len() as u32;
        let mut inst = vec![(count << 16) | OP_ENTRY_POINT, model, 42];
        inst.extend(name);
        inst
    }

    fn module(insts: &[Vec<u32>]) -> Vec<u32> {
        let mut words = vec![SPIRV_MAGIC, 0x0001_0600, 0, 100, 0];
        words.push((2 << 16) | 17); // OpCapability Shader
        words.push(1);
        for inst in insts {
            words.extend(inst);
        }
        words
    }

    #[test]
    fn finds_compute_entry_points() {
        let m =
            module(&[entry_point(5, "add"), entry_point(0, "vs"), entry_point(5, "saxpy_kernel")]);
        assert_eq!(compute_entry_points(&m), Ok(vec!["add".to_owned(), "saxpy_kernel".to_owned()]));
    }

    #[test]
    fn rejects_malformed_modules() {
        assert!(compute_entry_points(&[]).expect_err("must be rejected").contains("empty"));
        assert!(compute_entry_points(&[1, 2, 3, 4, 5])
            .expect_err("must be rejected")
            .contains("magic"));
        assert!(compute_entry_points(&[SPIRV_MAGIC.swap_bytes()])
            .expect_err("must be rejected")
            .contains("byte order"));
        assert!(compute_entry_points(&[SPIRV_MAGIC, 0])
            .expect_err("must be rejected")
            .contains("header"));
        let mut m = module(&[]);
        m.push(0);
        assert!(compute_entry_points(&m)
            .expect_err("must be rejected")
            .contains("word count of 0"));
        let mut m = module(&[]);
        m.push((9 << 16) | 15);
        assert!(compute_entry_points(&m).expect_err("must be rejected").contains("ends"));
    }
}
