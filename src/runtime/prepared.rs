//! A launch ready to enqueue: what the host launch path (`launch`) and the launches
//! that kernels make (`device_launch`) both prepare and run.

use ptxvk_vk::LaunchConfig;

use super::system_area::SystemArea;
use super::{Arg, Module};

/// A launch ready to enqueue.
pub(super) struct Prepared<'m> {
    pub(super) module: &'m Module,
    pub(super) cfg: LaunchConfig,
    pub(super) params: Vec<u8>,
    pub(super) system: Option<SystemArea>,
}

impl Prepared<'_> {
    /// The buffers the launch uses: its arguments', the module data and heap, and the
    /// system area.
    pub(super) fn keep(&self, args: &[Arg<'_>]) -> Vec<ptxvk_vk::Buffer> {
        let mut keep = Self::arguments(args);
        keep.extend(self.module.data.iter().chain(self.module.heap.get()).cloned());
        keep.extend(self.system.as_ref().map(|s| s.buffer.clone()));
        keep
    }
}

impl Prepared<'_> {
    /// The buffers `args` pass.
    pub(super) fn arguments(args: &[Arg<'_>]) -> Vec<ptxvk_vk::Buffer> {
        args.iter()
            .filter_map(|a| match a {
                Arg::Pointer { buffer, .. } => Some((*buffer).clone()),
                Arg::Bytes(_) => None,
            })
            .collect()
    }
}
