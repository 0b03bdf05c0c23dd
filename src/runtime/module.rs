//! Modules: PTX compiled (whole, or one kernel at its first lookup) and loaded on a
//! device, with their module data, heap and pipelines.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use ptxvk_abi::system;
use ptxvk_frontend::SourceMap;
use ptxvk_spirv::KernelInfo;
use ptxvk_vk::timing;

use super::{Device, TextureObject};
use crate::compile::{compile_module, Compiled, LazyModule};
use crate::target::{check_warp_mode, required_subgroup_size};
use crate::Error;

/// One kernel of a [`Module`].
#[derive(Clone, Copy, Debug)]
pub struct Kernel<'m> {
    pub(super) module: &'m Module,
    pub(super) index: usize,
    pub(super) code: &'m Code,
}

/// A PTX module loaded on a device: compiled once, one pipeline per block size.
///
/// Its kernels are compiled with it ([`Module::link`]), or each when it is first looked
/// up ([`Module::link_lazy`], CUDA's lazy loading).
#[derive(Debug)]
pub struct Module {
    pub(super) device: Device,
    /// Where kernels not compiled yet come from; `None` when every kernel was compiled
    /// with the module.
    pub(super) lazy: Option<LazyModule>,
    /// The kernels, in source order: those that compiled, for a module compiled whole.
    pub(super) names: Vec<String>,
    /// Each kernel's code, once compiled.
    pub(super) code: Vec<OnceLock<Code>>,
    /// Kernels of a module compiled whole that could not be compiled.
    pub(super) failed: Vec<crate::compile::FailedKernel>,
    /// One kernel compiles at a time (`lazy`): a second lookup of the same kernel waits
    /// for the first instead of compiling it again.
    pub(super) compiling: Mutex<()>,
    /// The layout of the module-scope `.global`/`.const` variables.
    pub(super) layout: ptxvk_lower::globals::ModuleData,
    /// The module data (`.global`/`.const` variables), uploaded once when the module is
    /// loaded so that `.global` values persist across launches.
    pub(super) data: Option<ptxvk_vk::Buffer>,
    /// The device's 32-bit address window, when the module has 32-bit addresses.
    pub(super) window: Option<ptxvk_vk::Window>,
    /// The device heap of `malloc` (`ptxvk_abi::system`), made when the first kernel
    /// that calls it is compiled; like module data it persists across launches.
    pub(super) heap: OnceLock<ptxvk_vk::Buffer>,
    /// System areas (parameter block + trap/assert/printf area) of kernels that have one,
    /// in host memory so the host reads them without a copy; reused once a launch's
    /// completion check has read its area.
    pub(super) system_areas: Arc<Mutex<Vec<ptxvk_vk::Buffer>>>,
    /// Launch arenas of kernels that launch kernels (`device_launch`), reused.
    pub(super) launch_arenas: Mutex<Vec<ptxvk_vk::Buffer>>,
    /// The module's data image, for formatting `printf` strings after launches that
    /// complete asynchronously.
    pub(super) strings: Arc<Vec<u8>>,
}

/// A kernel's code: the compilation it came from (all of a module's kernels share one
/// when the module was compiled whole; a kernel compiled on first use has its own) and
/// its pipeline.
#[derive(Debug)]
pub(super) struct Code {
    pub(super) unit: Arc<Compiled>,
    /// Its index in `unit.spirv.kernels`.
    pub(super) at: usize,
    pub(super) program: ptxvk_vk::Program,
}

impl Code {
    pub(super) fn info(&self) -> &KernelInfo {
        &self.unit.spirv.kernels[self.at]
    }
}

/// Creates the pipeline of kernel `at` of `compiled` on `device`.
pub(super) fn program(device: &Device, compiled: &Arc<Compiled>, at: usize) -> Result<Code, Error> {
    check_warp_mode(device.info(), compiled.target.warp_mode)?;
    let needs = compiled.spirv.requirements.features();
    let subgroup_size = required_subgroup_size(device.info(), compiled.target.warp_mode);
    let name = &compiled.spirv.kernels[at].name;
    let words = &compiled.spirv.words;
    let program =
        device.inner.create_program_with_subgroup_size(words, name, &needs, subgroup_size)?;
    Ok(Code { unit: Arc::clone(compiled), at, program })
}

impl Module {
    /// Compiles `ptx` and creates its programs on `device`. Rejected PTX is
    /// [`Error::Ptx`] with rendered diagnostics; missing device features are
    /// [`Error::Runtime`] naming them. A kernel that cannot be compiled does not fail
    /// the module: looking it up ([`Module::kernel`]) returns its diagnostics.
    pub fn from_ptx(device: &Device, ptx: &str) -> Result<Module, Error> {
        Self::from_ptx_named(device, "<ptx>", ptx)
    }

    /// Like [`Module::from_ptx`], with the file name used in diagnostics.
    pub fn from_ptx_named(device: &Device, name: &str, ptx: &str) -> Result<Module, Error> {
        Self::link(device, &SourceMap::new([(name, ptx)]))
    }

    /// Compiles several PTX files linked into one program (the linker: `.extern`,
    /// `.weak` and `.common` symbols resolve across files, see
    /// [`ptxvk_frontend::link()`]) and creates its programs on `device`. A program may
    /// have no kernels (only device functions and variables).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), ptxvk::Error> {
    /// let device = ptxvk::Device::default_device()?;
    /// let main = std::fs::read_to_string("main.ptx").unwrap();
    /// let lib = std::fs::read_to_string("lib.ptx").unwrap();
    /// let sources = ptxvk::SourceMap::new([("main.ptx", &main), ("lib.ptx", &lib)]);
    /// let module = ptxvk::Module::link(&device, &sources)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn link(device: &Device, sources: &SourceMap) -> Result<Module, Error> {
        let since = timing::start();
        let compiled = compile_module(sources, device.target())?;
        let fields = format!("words={}", compiled.spirv.words.len());
        timing::record(since, "compile", "<module>", &fields);
        Self::from_compiled(device, compiled)
    }

    /// Like [`Module::link`], but each kernel is compiled, and its pipeline created,
    /// when it is first looked up ([`Module::kernel`]): loading checks the program as a
    /// whole (syntax, module-scope variables) and a kernel's own errors come from its
    /// lookup. This is CUDA's lazy loading (`CUDA_MODULE_LOADING=LAZY`, CUDA 12.2's
    /// default), for libraries that ship hundreds of kernels of which a program uses
    /// a few ([`LazyModule`]).
    pub fn link_lazy(device: &Device, sources: SourceMap) -> Result<Module, Error> {
        let since = timing::start();
        let bytes = sources.text().len();
        let lazy = LazyModule::new(sources, device.target())?;
        timing::record(since, "load", "<module>", &format!("bytes={bytes}"));
        check_warp_mode(device.info(), lazy.target().warp_mode)?;
        let names = lazy.kernel_names().to_vec();
        let layout = lazy.data().clone();
        let code = names.iter().map(|_| OnceLock::new()).collect();
        let needs_window = lazy.address_size() == 32 && !names.is_empty();
        Self::with_code(device, Some(lazy), names, code, Vec::new(), layout, needs_window)
    }

    /// Loads an already compiled module (its warp mode must suit the device).
    pub fn from_compiled(device: &Device, compiled: Compiled) -> Result<Module, Error> {
        let compiled = Arc::new(compiled);
        let code = (0..compiled.spirv.kernels.len())
            .map(|at| program(device, &compiled, at))
            .collect::<Result<Vec<_>, _>>()?;
        let names = compiled.spirv.kernels.iter().map(|k| k.name.clone()).collect();
        let needs_window = compiled.spirv.kernels.iter().any(|k| k.address_size == 32);
        let code = code.into_iter().map(OnceLock::from).collect();
        let failed = compiled.failed.clone();
        let layout = compiled.data.clone();
        let module = Self::with_code(device, None, names, code, failed, layout, needs_window)?;
        module.make_heap(&compiled)?;
        Ok(module)
    }

    pub(super) fn with_code(
        device: &Device,
        lazy: Option<LazyModule>,
        names: Vec<String>,
        code: Vec<OnceLock<Code>>,
        failed: Vec<crate::compile::FailedKernel>,
        layout: ptxvk_lower::globals::ModuleData,
        needs_window: bool,
    ) -> Result<Module, Error> {
        // 32-bit addresses are offsets into the device's address window, where the
        // module's data and every later buffer go.
        let window = if needs_window { Some(device.address_window()?) } else { None };
        // The module data, with the addresses of variables its initializers name
        // patched in once the buffer's address is known.
        let data = if layout.image.is_empty() {
            None
        } else {
            let bytes = layout.image.len() as u64;
            // `__managed__` variables: the host uses their device addresses (CUDA's
            // runtime hands them to the program), so the data goes in managed memory.
            let buf = if layout.vars.iter().any(|v| v.managed) {
                device.inner.alloc_managed(bytes)?
            } else {
                device.alloc(bytes)?
            };
            let mut image = layout.image.clone();
            for r in &layout.relocations {
                let at = r.at as usize;
                let addr = buf.address() + u64::from(r.target);
                image[at..at + 8].copy_from_slice(&addr.to_le_bytes());
            }
            device.inner.upload(&buf, 0, &image)?;
            Some(buf)
        };
        let strings = Arc::new(layout.image.clone());
        Ok(Module {
            device: device.clone(),
            lazy,
            names,
            code,
            failed,
            compiling: Mutex::default(),
            layout,
            data,
            heap: OnceLock::new(),
            window,
            system_areas: Arc::default(),
            launch_arenas: Mutex::default(),
            strings,
        })
    }

    /// Makes the device heap when a kernel of `compiled` calls `malloc`.
    pub(super) fn make_heap(&self, compiled: &Compiled) -> Result<(), Error> {
        if self.heap.get().is_none() && compiled.spirv.kernels.iter().any(|k| k.heap) {
            let _ = self.heap.set(self.device.alloc(system::HEAP_BYTES)?);
        }
        Ok(())
    }

    /// Kernel `index`'s code, compiled now if the module is lazy and it was not yet.
    pub(super) fn code(&self, index: usize) -> Result<&Code, Error> {
        let slot = self.code.get(index).ok_or_else(|| Error::NoSuchKernel {
            name: format!("#{index}"),
            available: self.names.clone(),
        })?;
        if let Some(code) = slot.get() {
            return Ok(code);
        }
        let (Some(lazy), Some(name)) = (&self.lazy, self.names.get(index)) else {
            return Err(Error::Launch(format!("kernel #{index} of the module has no code")));
        };
        let _one_at_a_time = self.compiling.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(code) = slot.get() {
            return Ok(code);
        }
        let since = timing::start();
        let compiled = Arc::new(lazy.compile(name)?);
        let words = format!("words={}", compiled.spirv.words.len());
        timing::record(since, "compile", name, &words);
        self.make_heap(&compiled)?;
        // The unit holds the kernels a device-side launcher may launch too; each keeps
        // its own slot, compiled alone when first looked up.
        let at = compiled.spirv.kernels.iter().position(|k| k.name == *name);
        let at = at.ok_or_else(|| Error::Launch(format!("kernel `{name}` compiled to no code")))?;
        let since = timing::start();
        let code = program(&self.device, &compiled, at)?;
        timing::record(since, "program", name, "");
        Ok(slot.get_or_init(|| code))
    }

    /// Reads the current bytes of module-scope variable `name` (`.global` or `.const`).
    pub fn read_global(&self, name: &str) -> Result<Vec<u8>, Error> {
        let (var, buf) = self.global(name)?;
        Ok(self.device.inner.download(buf, u64::from(var.offset), u64::from(var.size))?)
    }

    /// Overwrites module-scope variable `name` with `bytes` (which must fit it); later
    /// launches see the new value.
    pub fn write_global(&self, name: &str, bytes: &[u8]) -> Result<(), Error> {
        let (var, buf) = self.global(name)?;
        if bytes.len() as u64 > u64::from(var.size) {
            return Err(Error::Launch(format!(
                "`{name}` holds {} bytes, not {}",
                var.size,
                bytes.len()
            )));
        }
        Ok(self.device.inner.upload(buf, u64::from(var.offset), bytes)?)
    }

    /// Binds a module's texture or surface reference (`.texref`, `.surfref`, or a
    /// variable of the deprecated `.tex` space) to `object`: the 8-byte variable of that
    /// name gets its handle, which later launches read (`sema::texture`).
    pub fn bind_texture(&self, name: &str, object: &TextureObject) -> Result<(), Error> {
        self.write_global(name, &object.handle().to_le_bytes())
    }

    pub(super) fn global(
        &self,
        name: &str,
    ) -> Result<(&ptxvk_lower::globals::GlobalVar, &ptxvk_vk::Buffer), Error> {
        match (self.layout.get(name), &self.data) {
            (Some(v), Some(b)) => Ok((v, b)),
            _ => Err(Error::Launch(format!(
                "the module has no `.global` or `.const` variable `{name}`"
            ))),
        }
    }

    /// The layout of the module-scope `.global`/`.const` variables.
    pub fn data_layout(&self) -> &ptxvk_lower::globals::ModuleData {
        &self.layout
    }

    /// Whether the module data's device addresses are host pointers too (where its
    /// `__managed__` variables are, the host reads and writes them there).
    pub fn data_is_host_addressable(&self) -> bool {
        self.data.as_ref().is_some_and(|b| b.host_ptr().map(|p| p as u64) == Some(b.address()))
    }

    /// The SPIR-V and layout kernel `name` was compiled to (compiling it now in a lazy
    /// module): for a module compiled whole, the module's.
    pub fn compiled(&self, name: &str) -> Result<&Compiled, Error> {
        Ok(&self.kernel(name)?.code.unit)
    }

    /// Kernel names in source order (for a module compiled whole, those that compiled).
    pub fn kernel_names(&self) -> Vec<&str> {
        self.names.iter().map(String::as_str).collect()
    }

    /// The kernel `name`, compiled now in a lazy module; a kernel of the module that
    /// could not be compiled is its diagnostics ([`Error::Ptx`]).
    pub fn kernel(&self, name: &str) -> Result<Kernel<'_>, Error> {
        if let Some(index) = self.names.iter().position(|k| k == name) {
            return self.kernel_at(index);
        }
        if let Some(failed) = self.failed.iter().find(|k| k.name == name) {
            return Err(failed.error());
        }
        Err(Error::NoSuchKernel {
            name: name.to_string(),
            available: self.kernel_names().iter().map(|s| s.to_string()).collect(),
        })
    }

    /// The kernels of a module compiled whole that could not be compiled, with their
    /// diagnostics (a lazy module's kernels report theirs when looked up).
    pub fn failed_kernels(&self) -> &[crate::compile::FailedKernel] {
        &self.failed
    }

    /// The kernel at `index` of [`Module::kernel_names`], compiled now in a lazy module.
    pub fn kernel_at(&self, index: usize) -> Result<Kernel<'_>, Error> {
        Ok(Kernel { module: self, index, code: self.code(index)? })
    }

    /// Whether the kernel at `index` has been compiled (always, for a module compiled
    /// whole): `cuFuncIsLoaded`.
    pub fn is_compiled(&self, index: usize) -> bool {
        self.code.get(index).is_some_and(|c| c.get().is_some())
    }

    /// The device address and size in bytes of module-scope variable `name` (`.global`
    /// or `.const`), as `cuModuleGetGlobal` reports them.
    pub fn global_address(&self, name: &str) -> Result<(u64, u32), Error> {
        let (var, buf) = self.global(name)?;
        Ok((buf.address() + u64::from(var.offset), var.size))
    }
}
