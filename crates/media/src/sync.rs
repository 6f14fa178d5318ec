//! Locking for state shared with GStreamer's streaming threads.

use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, recovering the data if a panicking thread poisoned it (the state is
/// counters only; a half-updated counter is better than a second panic in a streaming
/// thread).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
