//! Events: points in a stream that the host can query and wait for, other streams can
//! wait for, and that carry a GPU timestamp for elapsed-time measurements.
//!
//! An event recorded on a stream remembers the stream and the timeline value of the batch
//! it was recorded in; it is complete when that stream's timeline reaches the value. With
//! timing, the record writes a timestamp query (one per event) after the stream's earlier
//! work, so [`Event::elapsed_ms`] measures GPU time between two records.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use ash::vk;

use crate::conv;
use crate::error::Error;
use crate::objects::{Device, DeviceShared, EventInner, StreamCore};

impl EventInner {
    pub(crate) fn recorded(&self) -> Option<(Arc<StreamCore>, u64)> {
        self.recorded.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub(crate) fn set_recorded(&self, core: Arc<StreamCore>, value: u64) {
        *self.recorded.lock().unwrap_or_else(PoisonError::into_inner) = Some((core, value));
    }
}

impl Drop for EventInner {
    fn drop(&mut self) {
        // SAFETY: every batch that writes the query keeps this structure alive, so none is
        // pending; a null pool is ignored by Vulkan.
        unsafe { self.gpu.raw.destroy_query_pool(self.queries, None) };
    }
}

/// A marker in a stream (`CUevent`).
pub struct Event {
    pub(crate) shared: Arc<DeviceShared>,
    pub(crate) inner: Arc<EventInner>,
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("timing", &(self.inner.queries != vk::QueryPool::null()))
            .finish_non_exhaustive()
    }
}

impl Device {
    /// A new event (`cuEventCreate`); with `timing`, records take GPU timestamps (only
    /// where the queue can write them: [`crate::DeviceInfo::timestamps`]).
    pub fn create_event(&self, timing: bool) -> Result<Event, Error> {
        self.shared.check_alive()?;
        let queries = if timing && self.shared.info.timestamps {
            let info = vk::QueryPoolCreateInfo::default()
                .query_type(vk::QueryType::TIMESTAMP)
                .query_count(1);
            // SAFETY: the device is alive.
            unsafe { self.shared.raw.create_query_pool(&info, None) }
                .map_err(Error::vk("vkCreateQueryPool"))?
        } else {
            vk::QueryPool::null()
        };
        Ok(Event {
            shared: Arc::clone(&self.shared),
            inner: Arc::new(EventInner {
                gpu: Arc::clone(&self.shared.gpu),
                queries,
                recorded: Mutex::new(None),
            }),
        })
    }
}

impl Event {
    /// Whether the work before the event's record has completed (`cuEventQuery`); an event
    /// never recorded is complete. Submits the stream's pending work.
    pub fn query(&self) -> Result<bool, Error> {
        self.shared.check_alive()?;
        let Some((core, value)) = self.inner.recorded() else { return Ok(true) };
        core.flush_through(&self.shared, value)?;
        // SAFETY: the semaphore is alive: `core` is held.
        let done = unsafe { self.shared.raw.get_semaphore_counter_value(core.timeline) }
            .map_err(|r| self.shared.note(Error::from_vk("vkGetSemaphoreCounterValue", r)))?;
        Ok(done >= value)
    }

    /// Waits until the work before the event's record has completed
    /// (`cuEventSynchronize`), with the device timeout.
    pub fn synchronize(&self) -> Result<(), Error> {
        self.shared.check_alive()?;
        let Some((core, value)) = self.inner.recorded() else { return Ok(()) };
        core.flush_through(&self.shared, value)?;
        core.wait_for(&self.shared, value)
    }

    /// GPU time in milliseconds from `start`'s record to `end`'s (`cuEventElapsedTime`).
    /// Both must have been created with timing, recorded, and completed
    /// ([`Error::InvalidUse`] says which is not).
    pub fn elapsed_ms(start: &Event, end: &Event) -> Result<f64, Error> {
        let shared = &start.shared;
        if !Arc::ptr_eq(shared, &end.shared) {
            return Err(Error::ForeignObject("event"));
        }
        shared.check_alive()?;
        let mut ticks = [0u64; 2];
        for (tick, event) in ticks.iter_mut().zip([start, end]) {
            if event.inner.queries == vk::QueryPool::null() {
                return Err(Error::InvalidUse("the event was created without timing".into()));
            }
            if event.inner.recorded().is_none() {
                return Err(Error::InvalidUse("the event has not been recorded".into()));
            }
            if !event.query()? {
                return Err(Error::NotReady);
            }
            let mut result = [0u64; 1];
            // SAFETY: the pool holds one timestamp query, written by a batch that has
            // completed (checked above).
            unsafe {
                shared.raw.get_query_pool_results(
                    event.inner.queries,
                    0,
                    &mut result,
                    vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
                )
            }
            .map_err(|r| shared.note(Error::from_vk("vkGetQueryPoolResults", r)))?;
            *tick = result[0];
        }
        let ms = conv::timestamp_ms(
            ticks[0],
            ticks[1],
            shared.timestamp_valid_bits,
            shared.info.timestamp_period_ns,
        );
        // A negative time (end recorded before start) shows as a wrapped count; report it
        // as negative like CUDA.
        let back = conv::timestamp_ms(
            ticks[1],
            ticks[0],
            shared.timestamp_valid_bits,
            shared.info.timestamp_period_ns,
        );
        Ok(if back < ms { -back } else { ms })
    }
}
