//! Synchronous timed launches (the launch configuration and its validation are
//! `launch_config.rs`'s). Recording happens on a
//! [`Stream`] (`stream.rs`).

use crate::conv;
use crate::error::Error;
use crate::event::Event;
use crate::launch_config::LaunchConfig;
use crate::memory::Buffer;
use crate::objects::Device;
use crate::program::Program;
use crate::stream::Stream;
use crate::types::Submit;

/// What a launch measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LaunchStats {
    /// GPU time from before the first dispatch to after the last, in milliseconds
    /// (0.0 when the queue cannot write timestamps).
    pub kernel_ms: f64,
    /// Number of `vkCmdDispatch` calls the grid was split into.
    pub dispatches: u32,
}

impl Device {
    /// Runs `program` over `cfg.grid` blocks of `cfg.block` threads on the legacy default
    /// stream and waits for it, timing it with GPU timestamps where the queue has them.
    ///
    /// The configuration is validated before anything is recorded. A grid larger than the
    /// device's `maxComputeWorkGroupCount` is split into several dispatches, each told its
    /// block-index offset through the push constants. Writes of the kernel are visible to
    /// later work and to the host when this returns.
    pub fn launch(&self, program: &Program, cfg: &LaunchConfig) -> Result<LaunchStats, Error> {
        self.default_stream().launch_and_wait(program, cfg, None, &[], true)
    }
}

impl Stream {
    /// Launches and waits; with `timed`, measures the kernel's GPU time between two
    /// timestamps (which costs about 100 µs on lavapipe, whose timestamp writes wait for
    /// all earlier work). `params` as in [`Stream::launch_with_params`] (`None`:
    /// `cfg.param_address`).
    pub fn launch_and_wait(
        &self,
        program: &Program,
        cfg: &LaunchConfig,
        params: Option<&[u8]>,
        keep: &[&Buffer],
        timed: bool,
    ) -> Result<LaunchStats, Error> {
        let device = self.device();
        // Everything in one submission: start event, launch, end event.
        let timers =
            (timed && device.info().timestamps).then(|| self.shared.take_timers()).transpose()?;
        if let Some((start, _)) = &timers {
            self.record_with(start, Submit::Later)?;
        }
        self.launch_inner(program, cfg, params, keep, Submit::Later)?;
        if let Some((_, end)) = &timers {
            self.record_with(end, Submit::Later)?;
        }
        let waited = self.synchronize();
        let kernel_ms = match &timers {
            Some((start, end)) if waited.is_ok() => Event::elapsed_ms(start, end)?.max(0.0),
            _ => 0.0,
        };
        if let Some(timers) = timers {
            self.shared.give_back_timers(timers);
        }
        waited?;
        let dispatches = conv::split_grid(cfg.grid, self.dispatch_limit(cfg)).len();
        Ok(LaunchStats { kernel_ms, dispatches: u32::try_from(dispatches).unwrap_or(u32::MAX) })
    }
}
