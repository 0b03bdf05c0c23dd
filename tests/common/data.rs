//! Test data: a deterministic generator, byte conversions and the launch description
//! shared by the end-to-end tests and the demo.

use ptxvk::spec::SpecArg;

/// The deterministic generator (splitmix64) of ptxvk's own tests.
pub use ptxvk::lower::random_cfg::Rng;

/// Test values drawn from [`Rng`].
pub trait TestValues {
    /// A finite, normal f32 with magnitude in [2^-20, 2^20] and a random sign.
    fn normal_f32(&mut self) -> f32;
}

impl TestValues for Rng {
    fn normal_f32(&mut self) -> f32 {
        let r = self.next_u64();
        let sign = (r & 1) as u32;
        let exp = 127 - 20 + ((r >> 1) % 41) as u32;
        let mant = ((r >> 8) as u32) & 0x7f_ffff;
        f32::from_bits(sign << 31 | exp << 23 | mant)
    }
}

pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn u32_bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn u64_bytes(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// One launch and what the CPU reference says each buffer holds afterwards.
pub struct Case {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    pub args: Vec<SpecArg>,
    /// (argument index, expected bytes of that buffer after the kernel).
    pub expected: Vec<(usize, Vec<u8>)>,
}
