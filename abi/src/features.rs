//! Optional device capabilities by their Vulkan names, and what a compiled module
//! requires of them.

/// Optional capabilities a compiled module may need; also what a device offers.
///
/// Each flag corresponds to one Vulkan feature (or, for the denorm flags, a float-controls
/// property); [`Features::missing_from`] reports them by their Vulkan names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// `shaderInt8` (8-bit integer arithmetic).
    pub int8: bool,
    /// `shaderInt16`.
    pub int16: bool,
    /// `shaderInt64`.
    pub int64: bool,
    /// `shaderFloat16`.
    pub float16: bool,
    /// `shaderFloat64`.
    pub float64: bool,
    /// `storageBuffer8BitAccess` (8-bit loads and stores of global memory).
    pub storage_buffer_8bit: bool,
    /// `storageBuffer16BitAccess`.
    pub storage_buffer_16bit: bool,
    /// `vulkanMemoryModel`.
    pub vulkan_memory_model: bool,
    /// `shaderBufferInt64Atomics`.
    pub int64_atomics: bool,
    /// `shaderSharedInt64Atomics` (64-bit atomics on shared memory).
    pub shared_int64_atomics: bool,
    /// `shaderBufferFloat32AtomicAdd` from `VK_EXT_shader_atomic_float`.
    pub float32_atomic_add: bool,
    /// `shaderSubgroupClock` from `VK_KHR_shader_clock` (device clock enabled when offered).
    pub shader_clock: bool,
    /// `shaderDeviceClock` from `VK_KHR_shader_clock`: `%clock`, `%globaltimer`.
    pub device_clock: bool,
    /// The `shaderDenormPreserveFloat32` property.
    pub denorm_preserve_f32: bool,
    /// The `shaderDenormPreserveFloat64` property.
    pub denorm_preserve_f64: bool,
    /// `subgroupSizeControl`.
    pub subgroup_size_control: bool,
    /// The `shaderSignedZeroInfNanPreserveFloat32` property.
    pub signed_zero_preserve_f32: bool,
    /// The `shaderSignedZeroInfNanPreserveFloat64` property.
    pub signed_zero_preserve_f64: bool,
    /// `shaderZeroInitializeWorkgroupMemory` (Vulkan 1.3): zero-initialized shared
    /// variables, which racecheck's shadow is.
    pub zero_initialize_workgroup_memory: bool,
}

impl Features {
    /// Every flag with its Vulkan name, in declaration order.
    fn flags(&self) -> [(bool, &'static str); 19] {
        [
            (self.int8, "shaderInt8"),
            (self.int16, "shaderInt16"),
            (self.int64, "shaderInt64"),
            (self.float16, "shaderFloat16"),
            (self.float64, "shaderFloat64"),
            (self.storage_buffer_8bit, "storageBuffer8BitAccess"),
            (self.storage_buffer_16bit, "storageBuffer16BitAccess"),
            (self.vulkan_memory_model, "vulkanMemoryModel"),
            (self.int64_atomics, "shaderBufferInt64Atomics"),
            (self.shared_int64_atomics, "shaderSharedInt64Atomics"),
            (self.float32_atomic_add, "shaderBufferFloat32AtomicAdd"),
            (self.shader_clock, "shaderSubgroupClock"),
            (self.device_clock, "shaderDeviceClock"),
            (self.denorm_preserve_f32, "shaderDenormPreserveFloat32"),
            (self.denorm_preserve_f64, "shaderDenormPreserveFloat64"),
            (self.subgroup_size_control, "subgroupSizeControl"),
            (self.signed_zero_preserve_f32, "shaderSignedZeroInfNanPreserveFloat32"),
            (self.signed_zero_preserve_f64, "shaderSignedZeroInfNanPreserveFloat64"),
            (self.zero_initialize_workgroup_memory, "shaderZeroInitializeWorkgroupMemory"),
        ]
    }

    /// Clears the features named in `list`, a comma-separated list of Vulkan names
    /// (`PTXVK_MASK_FEATURES=shaderFloat64,shaderInt64Atomics`), so that a device looks
    /// as if it lacked them. An unknown name is an error that lists the known ones.
    pub fn mask(&mut self, list: &str) -> Result<(), String> {
        let known: Vec<&'static str> = self.flags().iter().map(|(_, n)| *n).collect();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let Some(k) = known.iter().position(|n| *n == name) else {
                return Err(format!(
                    "unknown feature `{name}`; known features: {}",
                    known.join(", ")
                ));
            };
            let flags: [&mut bool; 19] = [
                &mut self.int8,
                &mut self.int16,
                &mut self.int64,
                &mut self.float16,
                &mut self.float64,
                &mut self.storage_buffer_8bit,
                &mut self.storage_buffer_16bit,
                &mut self.vulkan_memory_model,
                &mut self.int64_atomics,
                &mut self.shared_int64_atomics,
                &mut self.float32_atomic_add,
                &mut self.shader_clock,
                &mut self.device_clock,
                &mut self.denorm_preserve_f32,
                &mut self.denorm_preserve_f64,
                &mut self.subgroup_size_control,
                &mut self.signed_zero_preserve_f32,
                &mut self.signed_zero_preserve_f64,
                &mut self.zero_initialize_workgroup_memory,
            ];
            if let Some(flag) = flags.into_iter().nth(k) {
                *flag = false;
            }
        }
        Ok(())
    }

    /// Names of the features in `self` that `offered` lacks, e.g. `["shaderFloat64"]`
    /// (Vulkan feature names, in declaration order).
    pub fn missing_from(&self, offered: &Features) -> Vec<&'static str> {
        self.flags()
            .into_iter()
            .zip(offered.flags())
            .filter(|((needed, _), (has, _))| *needed && !*has)
            .map(|((_, name), _)| name)
            .collect()
    }

    /// Vulkan names of the features that are set.
    pub fn names(&self) -> Vec<&'static str> {
        self.flags().into_iter().filter(|(set, _)| *set).map(|(_, name)| name).collect()
    }

    /// Features set in either `self` or `other`.
    #[must_use]
    pub fn union(&self, other: &Features) -> Features {
        Features {
            int8: self.int8 || other.int8,
            int16: self.int16 || other.int16,
            int64: self.int64 || other.int64,
            float16: self.float16 || other.float16,
            float64: self.float64 || other.float64,
            storage_buffer_8bit: self.storage_buffer_8bit || other.storage_buffer_8bit,
            storage_buffer_16bit: self.storage_buffer_16bit || other.storage_buffer_16bit,
            vulkan_memory_model: self.vulkan_memory_model || other.vulkan_memory_model,
            int64_atomics: self.int64_atomics || other.int64_atomics,
            shared_int64_atomics: self.shared_int64_atomics || other.shared_int64_atomics,
            float32_atomic_add: self.float32_atomic_add || other.float32_atomic_add,
            shader_clock: self.shader_clock || other.shader_clock,
            device_clock: self.device_clock || other.device_clock,
            denorm_preserve_f32: self.denorm_preserve_f32 || other.denorm_preserve_f32,
            denorm_preserve_f64: self.denorm_preserve_f64 || other.denorm_preserve_f64,
            subgroup_size_control: self.subgroup_size_control || other.subgroup_size_control,
            signed_zero_preserve_f32: self.signed_zero_preserve_f32
                || other.signed_zero_preserve_f32,
            signed_zero_preserve_f64: self.signed_zero_preserve_f64
                || other.signed_zero_preserve_f64,
            zero_initialize_workgroup_memory: self.zero_initialize_workgroup_memory
                || other.zero_initialize_workgroup_memory,
        }
    }
}

/// What a compiled module needs of the device beyond Vulkan 1.3 compute; the runtime
/// checks it ([`Requirements::features`]) before creating the module's pipelines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Requirements {
    /// 8-bit integer arithmetic.
    pub int8: bool,
    /// 16-bit integer arithmetic.
    pub int16: bool,
    /// f64 arithmetic (native; emulated f64 needs nothing).
    pub float64: bool,
    /// 8-bit loads and stores of global memory.
    pub storage_buffer_8bit: bool,
    /// 16-bit loads and stores of global memory.
    pub storage_buffer_16bit: bool,
    /// 64-bit atomics on global memory.
    pub int64_atomics: bool,
    /// 64-bit atomics on shared memory: a kernel has a window of 64-bit words.
    pub shared_int64_atomics: bool,
    /// Zero-initialized shared variables: a kernel keeps racecheck's shadow.
    pub zero_initialize_workgroup_memory: bool,
    /// The device clock: a kernel reads `%clock`, `%clock64` or `%globaltimer`.
    pub device_clock: bool,
}

impl Requirements {
    /// The device features the module needs: these, and `shaderInt64` always (ptxvk's
    /// addresses are 64-bit physical storage buffer pointers).
    pub fn features(&self) -> Features {
        Features {
            int8: self.int8,
            int16: self.int16,
            int64: true,
            float64: self.float64,
            storage_buffer_8bit: self.storage_buffer_8bit,
            storage_buffer_16bit: self.storage_buffer_16bit,
            int64_atomics: self.int64_atomics,
            shared_int64_atomics: self.shared_int64_atomics,
            zero_initialize_workgroup_memory: self.zero_initialize_workgroup_memory,
            device_clock: self.device_clock,
            ..Features::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Features;

    #[test]
    fn mask_clears_the_named_features_and_rejects_unknown_names() {
        let all = Features {
            int64: true,
            float64: true,
            int64_atomics: true,
            signed_zero_preserve_f64: true,
            ..Features::default()
        };
        let mut f = all;
        f.mask("shaderFloat64, shaderBufferInt64Atomics").expect("known names");
        assert_eq!(f.names(), ["shaderInt64", "shaderSignedZeroInfNanPreserveFloat64"]);
        let mut g = all;
        f.mask("").expect("an empty list masks nothing");
        g.mask("shaderSignedZeroInfNanPreserveFloat64").expect("the last flag");
        assert_eq!(g.names(), ["shaderInt64", "shaderFloat64", "shaderBufferInt64Atomics"]);
        let err = g.mask("shaderFloat65").expect_err("unknown");
        assert!(err.starts_with("unknown feature `shaderFloat65`; known features: shaderInt8"));
    }
}
