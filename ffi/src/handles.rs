//! Runtime handles: generation-tagged integers, so a null, freed, double-freed or made-up
//! handle is rejected with `SPOT_E_INVALID_HANDLE` instead of being dereferenced.
//!
//! A handle is `generation << 32 | (index + 1)`: the low half is never 0, so 0 is never a
//! valid handle, and freeing bumps the entry's generation, so an old handle to a reused
//! entry does not match. A lookup is one atomic load of the entry's live generation and a
//! hit in the calling thread's cache of the runtime it used last; no lock is shared by
//! the threads of a host.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::boundary::{Failure, FfiResult};
use crate::core_runtime::FfiRuntime;
use crate::status::{SPOT_E_CAPACITY_EXHAUSTED, SPOT_E_INVALID_HANDLE};

/// Most runtimes alive at once in a process.
const MAX_RUNTIMES: usize = 1 << 16;

struct Entry {
    generation: u32,
    runtime: Option<Arc<FfiRuntime>>,
}

struct Registry {
    entries: Vec<Entry>,
    free: Vec<u32>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    entries: Vec::new(),
    free: Vec::new(),
});

/// Per entry: the generation of the runtime living there, 0 when none.
fn live() -> &'static [AtomicU32] {
    static LIVE: OnceLock<Box<[AtomicU32]>> = OnceLock::new();
    LIVE.get_or_init(|| (0..MAX_RUNTIMES).map(|_| AtomicU32::new(0)).collect())
}

thread_local! {
    /// The runtime this thread looked up last.
    static CACHE: RefCell<Option<(u64, Arc<FfiRuntime>)>> = const { RefCell::new(None) };
}

// A panic never happens while the lock is held (only Vec operations), but a poisoned lock
// must not turn every later call into a panic either.
fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

fn split(handle: u64) -> Option<(usize, u32)> {
    let low = handle as u32;
    if low == 0 || low as usize > MAX_RUNTIMES {
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
pub(crate) fn insert(runtime: Arc<FfiRuntime>) -> FfiResult<u64> {
    let mut r = registry();
    let index = match r.free.pop() {
        Some(i) => i,
        None if r.entries.len() < MAX_RUNTIMES => {
            r.entries.push(Entry {
                generation: 1,
                runtime: None,
            });
            (r.entries.len() - 1) as u32
        }
        None => {
            return Err(Failure::new(
                SPOT_E_CAPACITY_EXHAUSTED,
                format!("{MAX_RUNTIMES} runtimes are alive: free some first"),
            ))
        }
    };
    let e = &mut r.entries[index as usize];
    e.runtime = Some(runtime);
    live()[index as usize].store(e.generation, Ordering::Release);
    Ok((u64::from(e.generation) << 32) | (u64::from(index) + 1))
}

/// The runtime a handle names, kept alive for the caller's use.
pub(crate) fn get(handle: u64) -> FfiResult<Arc<FfiRuntime>> {
    let (index, generation) = split(handle).ok_or_else(|| invalid(handle))?;
    if live()[index].load(Ordering::Acquire) != generation {
        return Err(invalid(handle));
    }
    let cached = CACHE.with(|c| match &*c.borrow() {
        Some((h, rt)) if *h == handle => Some(rt.clone()),
        _ => None,
    });
    if let Some(rt) = cached {
        return Ok(rt);
    }
    let rt = {
        let r = registry();
        match r.entries.get(index) {
            Some(e) if e.generation == generation => e.runtime.clone(),
            _ => None,
        }
    }
    .ok_or_else(|| invalid(handle))?;
    // A free racing this lookup leaves the cached runtime closed: calls on it then report
    // SPOT_E_CLOSED, and the next lookup of the freed handle fails its generation check.
    CACHE.with(|c| *c.borrow_mut() = Some((handle, rt.clone())));
    Ok(rt)
}

/// Removes a runtime from the registry; later lookups of `handle` fail.
pub(crate) fn remove(handle: u64) -> FfiResult<Arc<FfiRuntime>> {
    let (index, generation) = split(handle).ok_or_else(|| invalid(handle))?;
    let rt = {
        let mut r = registry();
        let e = match r.entries.get_mut(index) {
            Some(e) if e.generation == generation && e.runtime.is_some() => e,
            _ => return Err(invalid(handle)),
        };
        let rt = e.runtime.take().expect("checked above");
        e.generation = e.generation.wrapping_add(1).max(1);
        live()[index].store(0, Ordering::Release);
        r.free.push(index as u32);
        rt
    };
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.as_ref().is_some_and(|(h, _)| *h == handle) {
            *c = None;
        }
    });
    Ok(rt)
}
