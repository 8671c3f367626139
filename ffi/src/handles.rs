//! Runtime handles: a process-wide registry of generation-tagged integers, so a null,
//! freed, double-freed or made-up handle is rejected with `SPOT_E_INVALID_HANDLE` instead
//! of being dereferenced.
//!
//! A handle is `generation << 32 | (index + 1)`: the low half is never 0, so 0 is never a
//! valid handle, and freeing bumps the entry's generation, so an old handle to a reused
//! entry does not match.

use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::boundary::{Failure, FfiResult};
use crate::runtime::FfiRuntime;
use crate::status::SPOT_E_INVALID_HANDLE;

struct Entry {
    generation: u32,
    runtime: Option<Arc<FfiRuntime>>,
}

struct Registry {
    entries: Vec<Entry>,
    free: Vec<u32>,
}

static REGISTRY: RwLock<Registry> = RwLock::new(Registry {
    entries: Vec::new(),
    free: Vec::new(),
});

// A panic never happens while the lock is held (only Vec operations), but a poisoned lock
// must not turn every later call into a panic either.
fn read() -> RwLockReadGuard<'static, Registry> {
    REGISTRY.read().unwrap_or_else(|e| e.into_inner())
}

fn write() -> RwLockWriteGuard<'static, Registry> {
    REGISTRY.write().unwrap_or_else(|e| e.into_inner())
}

fn split(handle: u64) -> Option<(usize, u32)> {
    let low = handle as u32;
    if low == 0 {
        return None;
    }
    Some(((low - 1) as usize, (handle >> 32) as u32))
}

fn invalid(handle: u64) -> Failure {
    Failure::new(
        SPOT_E_INVALID_HANDLE,
        format!("runtime handle {handle:#x} is not a live runtime (null, freed or never valid)"),
    )
}

/// Registers a runtime and returns its handle.
pub(crate) fn insert(runtime: Arc<FfiRuntime>) -> u64 {
    let mut r = write();
    let index = match r.free.pop() {
        Some(i) => i,
        None => {
            r.entries.push(Entry {
                generation: 1,
                runtime: None,
            });
            (r.entries.len() - 1) as u32
        }
    };
    let e = &mut r.entries[index as usize];
    e.runtime = Some(runtime);
    (u64::from(e.generation) << 32) | (u64::from(index) + 1)
}

/// The runtime a handle names, kept alive for the caller's use.
pub(crate) fn get(handle: u64) -> FfiResult<Arc<FfiRuntime>> {
    let (index, generation) = split(handle).ok_or_else(|| invalid(handle))?;
    let r = read();
    match r.entries.get(index) {
        Some(e) if e.generation == generation => e.runtime.clone().ok_or_else(|| invalid(handle)),
        _ => Err(invalid(handle)),
    }
}

/// Removes a runtime from the registry; later lookups of `handle` fail.
pub(crate) fn remove(handle: u64) -> FfiResult<Arc<FfiRuntime>> {
    let (index, generation) = split(handle).ok_or_else(|| invalid(handle))?;
    let mut r = write();
    let e = match r.entries.get_mut(index) {
        Some(e) if e.generation == generation && e.runtime.is_some() => e,
        _ => return Err(invalid(handle)),
    };
    let rt = e.runtime.take().expect("checked above");
    e.generation = e.generation.wrapping_add(1).max(1);
    r.free.push(index as u32);
    Ok(rt)
}
