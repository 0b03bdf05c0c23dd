//! The launch configuration, and its validation against CUDA's rules and the device
//! limits, before anything is recorded.

use crate::error::Error;
use crate::types::Limits;

/// CUDA's grid limits: x up to 2^31 - 1, y and z up to 65535.
pub const CUDA_MAX_GRID: [u32; 3] = [i32::MAX as u32, 65535, 65535];

/// CUDA's block limits, on every compute capability (CUDA Programming Guide, "Compute
/// Capabilities"; PTX ISA §10.3: `%ntid.x` and `.y` up to 1024, `.z` up to 64). Code
/// built for CUDA may rely on them, so a device that allows more still gets no more.
pub const CUDA_MAX_BLOCK: [u32; 3] = [1024, 1024, 64];

/// CUDA's most shared memory per block on any compute capability (sm_90 and sm_100:
/// 227 KiB with `cudaFuncAttributeMaxDynamicSharedMemorySize`), the bound of a window in
/// device memory.
pub const CUDA_MAX_SHARED_PER_BLOCK: u32 = 227 * 1024;

/// One kernel launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks per grid (x, y, z), each at least 1.
    pub grid: [u32; 3],
    /// Threads per block (x, y, z), each at least 1.
    pub block: [u32; 3],
    /// Total shared memory per block in bytes: static plus dynamic (`extern .shared`).
    pub shared_bytes: u32,
    /// The dynamic part the launch asked for (`%dynamic_smem_size`).
    pub dynamic_shared_bytes: u32,
    /// Device address of the kernel's parameter block (push constant offset 0).
    pub param_address: u64,
    /// Device address of the module's constant block (push constant offset 8).
    pub const_address: u64,
    /// Device address of the 32-bit address window, for modules with 32-bit addresses
    /// (push constant offset 40; 0 otherwise).
    pub window_base: u64,
    /// The kernel keeps its shared window in device memory (`KernelInfo::
    /// shared_in_device_memory` of `ptxvk-spirv`): the stream gives every block of a
    /// dispatch `shared_stride(shared_bytes)` bytes of an area of its own, and
    /// `shared_bytes` may exceed the device's `maxComputeSharedMemorySize` (not CUDA's
    /// [`CUDA_MAX_SHARED_PER_BLOCK`]).
    pub shared_in_device_memory: bool,
    /// A confined kernel's launch that may reach allocations outside the device's
    /// confinement range (registered host memory): the pipeline then keeps the test
    /// against them (specialization constant `ptxvk_abi::spec_ids::CONFINED_OUTSIDE`).
    /// Without any, an access outside the range is refused with no further test.
    pub confined_outside: bool,
    /// How many times the whole grid is dispatched, one after another (at least 1): the
    /// phases of a kernel cut at its grid barriers. Every dispatch of a phase completes
    /// before the next phase's first starts.
    pub phases: u32,
}

impl Default for LaunchConfig {
    /// One block of one thread, no shared memory, null addresses.
    fn default() -> Self {
        LaunchConfig {
            grid: [1; 3],
            block: [1; 3],
            shared_bytes: 0,
            dynamic_shared_bytes: 0,
            param_address: 0,
            const_address: 0,
            window_base: 0,
            shared_in_device_memory: false,
            confined_outside: false,
            phases: 1,
        }
    }
}

/// Checks `cfg` against CUDA's rules and the device limits; the error names the offending
/// value and the limit.
pub(crate) fn validate(cfg: &LaunchConfig, limits: &Limits) -> Result<(), Error> {
    const AXES: [char; 3] = ['x', 'y', 'z'];
    for (what, dims) in [("grid", cfg.grid), ("block", cfg.block)] {
        if let Some(d) = dims.iter().position(|&n| n == 0) {
            return Err(Error::Launch(format!(
                "{what} dimension {} is 0; every grid and block dimension must be at least 1",
                AXES[d]
            )));
        }
    }
    for ((axis, &n), &max) in AXES.iter().zip(&cfg.block).zip(&limits.max_workgroup_size) {
        if n > max {
            return Err(Error::Launch(format!(
                "block dimension {axis} is {n}, the device allows at most {max} \
                 (maxComputeWorkGroupSize)"
            )));
        }
    }
    for ((axis, &n), &max) in AXES.iter().zip(&cfg.block).zip(&CUDA_MAX_BLOCK) {
        if n > max {
            return Err(Error::Launch(format!(
                "block dimension {axis} is {n}, CUDA allows at most {max}"
            )));
        }
    }
    let threads: u64 = cfg.block.iter().map(|&n| u64::from(n)).product();
    if threads > u64::from(limits.max_workgroup_invocations) {
        return Err(Error::Launch(format!(
            "a block of {}x{}x{} = {threads} threads exceeds the device's limit of {} threads \
             per block (maxComputeWorkGroupInvocations)",
            cfg.block[0], cfg.block[1], cfg.block[2], limits.max_workgroup_invocations
        )));
    }
    if cfg.shared_in_device_memory {
        if cfg.shared_bytes > CUDA_MAX_SHARED_PER_BLOCK {
            return Err(Error::Launch(format!(
                "{} bytes of shared memory per block exceed CUDA's limit of {} bytes",
                cfg.shared_bytes, CUDA_MAX_SHARED_PER_BLOCK
            )));
        }
    } else if cfg.shared_bytes > limits.max_shared_memory_bytes {
        return Err(Error::Launch(format!(
            "{} bytes of shared memory per block exceed the device's limit of {} bytes \
             (maxComputeSharedMemorySize)",
            cfg.shared_bytes, limits.max_shared_memory_bytes
        )));
    }
    for ((axis, &n), &max) in AXES.iter().zip(&cfg.grid).zip(&CUDA_MAX_GRID) {
        if n > max {
            return Err(Error::Launch(format!(
                "grid dimension {axis} is {n}, CUDA allows at most {max}"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_workgroup_count: [65535; 3],
        max_workgroup_size: [1024, 1024, 64],
        max_workgroup_invocations: 1024,
        max_shared_memory_bytes: 32768,
        max_push_constants_size: 128,
    };

    fn check(cfg: LaunchConfig) -> Result<(), String> {
        validate(&cfg, &LIMITS).map_err(|e| e.to_string())
    }

    #[test]
    fn accepts_valid_launches() {
        assert_eq!(check(LaunchConfig::default()), Ok(()));
        let big = LaunchConfig {
            grid: [i32::MAX as u32, 65535, 65535],
            block: [1024, 1, 1],
            shared_bytes: 32768,
            ..LaunchConfig::default()
        };
        assert_eq!(check(big), Ok(()));
    }

    #[test]
    fn cuda_block_limits_hold_where_the_device_allows_more() {
        // lavapipe allows 1024 threads along z; CUDA (and the PTX code built for it)
        // allows 64.
        let lavapipe = Limits { max_workgroup_size: [1024; 3], ..LIMITS };
        let cfg = LaunchConfig { block: [1, 1, 65], ..LaunchConfig::default() };
        let err = validate(&cfg, &lavapipe).expect_err("must be rejected").to_string();
        assert!(err.contains("block dimension z is 65, CUDA allows at most 64"), "{err}");
        let cfg = LaunchConfig { block: [1, 1, 64], ..LaunchConfig::default() };
        assert!(validate(&cfg, &lavapipe).is_ok());
    }

    #[test]
    fn rejects_with_value_and_limit() {
        let base = LaunchConfig::default();
        let err = check(LaunchConfig { grid: [1, 0, 1], ..base }).expect_err("must be rejected");
        assert!(err.contains("grid dimension y is 0"), "{err}");
        let err = check(LaunchConfig { block: [0, 1, 1], ..base }).expect_err("must be rejected");
        assert!(err.contains("block dimension x is 0"), "{err}");
        let err = check(LaunchConfig { block: [1, 1, 65], ..base }).expect_err("must be rejected");
        assert!(err.contains("block dimension z is 65") && err.contains("at most 64"), "{err}");
        let err = check(LaunchConfig { block: [64, 32, 1], ..base }).expect_err("must be rejected");
        assert!(err.contains("2048 threads") && err.contains("1024"), "{err}");
        let err =
            check(LaunchConfig { shared_bytes: 32769, ..base }).expect_err("must be rejected");
        assert!(err.contains("32769") && err.contains("32768"), "{err}");
        // A window in device memory is bound by CUDA's limit, not the device's.
        let in_memory = LaunchConfig { shared_in_device_memory: true, ..base };
        assert_eq!(check(LaunchConfig { shared_bytes: 40_000, ..in_memory }), Ok(()));
        let err = check(LaunchConfig { shared_bytes: 232_449, ..in_memory })
            .expect_err("must be rejected");
        assert!(err.contains("232449") && err.contains("CUDA's limit of 232448"), "{err}");
        let err =
            check(LaunchConfig { grid: [1 << 31, 1, 1], ..base }).expect_err("must be rejected");
        assert!(err.contains("2147483648") && err.contains("2147483647"), "{err}");
        let err =
            check(LaunchConfig { grid: [1, 1, 65536], ..base }).expect_err("must be rejected");
        assert!(err.contains("grid dimension z is 65536") && err.contains("65535"), "{err}");
    }
}
