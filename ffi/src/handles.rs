//! Runtime handles: generation-tagged integers, so a null, freed, double-freed or made-up
//! handle is rejected with `SPOT_E_INVALID_HANDLE` instead of being dereferenced.
//!
//! A handle is `generation << 32 | (index + 1)`: the low half is never 0, so 0 is never a
//! valid handle, and freeing bumps the entry's generation, so an old handle to a reused
//! entry does not match. A lookup is one atomic load of the entry's live generation and a
//! hit in the calling thread's cache of the runtime it used last (borrowed for the call,
//! not cloned); no lock and no reference count is shared by the threads of a host.

use std::cell::{Cell, RefCell};
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

/// The calling thread's cache of the runtime it looked up last. While `borrowed` is above
/// zero, calls on this thread are using the cached runtime by reference: the entry is then
/// neither replaced nor cleared, so the reference stays valid until the last of them ends.
struct ThreadCache {
    borrowed: Cell<u32>,
    entry: RefCell<Option<(u64, Arc<FfiRuntime>)>>,
}

thread_local! {
    static CACHE: ThreadCache = const {
        ThreadCache {
            borrowed: Cell::new(0),
            entry: RefCell::new(None),
        }
    };
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

/// A runtime kept alive for one call. Through the calling thread's cache (the common
/// case) it is a reference to the cached runtime, marked borrowed: one thread-local access
/// and no reference-count change, so threads of a host calling into one runtime write no
/// shared cache line here. Otherwise (a first or changed handle while a call on this
/// thread is using the cache, or a thread being torn down) it holds its own reference.
pub(crate) struct RuntimeRef {
    runtime: *const FfiRuntime,
    /// The thread's cache whose `borrowed` count this reference holds; null when owned.
    cache: *const ThreadCache,
    _owned: Option<Arc<FfiRuntime>>,
}

impl std::ops::Deref for RuntimeRef {
    type Target = FfiRuntime;
    fn deref(&self) -> &FfiRuntime {
        // SAFETY: `runtime` points into `owned`, or into the cache entry, which is not
        // replaced or cleared while this reference holds the cache's `borrowed` count.
        unsafe { &*self.runtime }
    }
}

impl Drop for RuntimeRef {
    fn drop(&mut self) {
        if !self.cache.is_null() {
            // SAFETY: the cache is the calling thread's (a RuntimeRef is neither Send nor
            // Sync, raw pointers inside) and lives as long as the thread.
            let c = unsafe { &*self.cache };
            c.borrowed.set(c.borrowed.get() - 1);
        }
    }
}

fn borrowed(c: &ThreadCache, rt: &Arc<FfiRuntime>) -> RuntimeRef {
    c.borrowed.set(c.borrowed.get() + 1);
    RuntimeRef {
        runtime: Arc::as_ptr(rt),
        cache: c,
        _owned: None,
    }
}

/// The runtime a handle names, kept alive for the caller's use.
pub(crate) fn get(handle: u64) -> FfiResult<RuntimeRef> {
    let (index, generation) = split(handle).ok_or_else(|| invalid(handle))?;
    if live()[index].load(Ordering::Acquire) != generation {
        return Err(invalid(handle));
    }
    let hit = CACHE.try_with(|c| match &*c.entry.borrow() {
        Some((h, rt)) if *h == handle => Some(borrowed(c, rt)),
        _ => None,
    });
    if let Ok(Some(r)) = hit {
        return Ok(r);
    }
    let runtime = {
        let r = registry();
        match r.entries.get(index) {
            Some(e) if e.generation == generation => e.runtime.clone(),
            _ => None,
        }
    }
    .ok_or_else(|| invalid(handle))?;
    // A free racing this lookup leaves the runtime closed: calls on it then report
    // SPOT_E_CLOSED, and the next lookup of the freed handle fails its generation check.
    let cached = CACHE.try_with(|c| {
        if c.borrowed.get() != 0 {
            return None;
        }
        let mut entry = c.entry.borrow_mut();
        let rt = &entry.insert((handle, runtime.clone())).1;
        Some(borrowed(c, rt))
    });
    Ok(match cached {
        Ok(Some(r)) => r,
        _ => RuntimeRef {
            runtime: Arc::as_ptr(&runtime),
            cache: std::ptr::null(),
            _owned: Some(runtime),
        },
    })
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
    // Forget the cached reference unless a call on this thread is using it (then the
    // next lookup's generation check rejects the handle, and the entry goes when replaced).
    let _ = CACHE.try_with(|c| {
        if c.borrowed.get() == 0 {
            let mut entry = c.entry.borrow_mut();
            if entry.as_ref().is_some_and(|(h, _)| *h == handle) {
                *entry = None;
            }
        }
    });
    Ok(rt)
}
