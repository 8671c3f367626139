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
use std::sync::{Arc, Mutex, MutexGuard};

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

/// Per entry: the generation of the runtime living there, 0 when none (a static array, so
/// a lookup reads it without a once-initialisation check; untouched pages stay unmapped).
static LIVE: [AtomicU32; MAX_RUNTIMES] = [const { AtomicU32::new(0) }; MAX_RUNTIMES];

/// The calling thread's cache of the runtime it looked up last, the part a lookup reads:
/// plain cells without a destructor, so reaching them is one thread-local access and no
/// state check. `runtime` is kept alive by the reference in [`OWNED`]. While `borrowed`
/// is above zero, calls on this thread are using the cached runtime by reference: the
/// entry is then neither replaced nor cleared, so the reference stays valid until the
/// last of them ends.
struct Fast {
    /// The cached runtime's handle; 0 (never a valid handle) when none.
    handle: Cell<u64>,
    runtime: Cell<*const FfiRuntime>,
    borrowed: Cell<u32>,
}

/// The reference that keeps the cached runtime alive. Its destructor (thread exit) first
/// empties the fast cells, so a call made later in the thread's teardown misses the cache
/// instead of reading a freed runtime.
struct Owned(RefCell<Option<Arc<FfiRuntime>>>);

impl Drop for Owned {
    fn drop(&mut self) {
        let borrowed = FAST.with(|f| {
            f.handle.set(0);
            f.runtime.set(std::ptr::null());
            f.borrowed.get()
        });
        if borrowed != 0 {
            // Unreachable (no call is under way while the thread's locals are torn down),
            // but a reference in use must never dangle: keep the runtime rather than free it.
            if let Some(rt) = self.0.get_mut().take() {
                std::mem::forget(rt);
            }
        }
    }
}

thread_local! {
    static FAST: Fast = const {
        Fast {
            handle: Cell::new(0),
            runtime: Cell::new(std::ptr::null()),
            borrowed: Cell::new(0),
        }
    };
    static OWNED: Owned = const { Owned(RefCell::new(None)) };
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

#[cold]
#[inline(never)]
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
    LIVE[index as usize].store(e.generation, Ordering::Release);
    Ok((u64::from(e.generation) << 32) | (u64::from(index) + 1))
}

/// A runtime kept alive for one call. Through the calling thread's cache (the common
/// case) it is a reference to the cached runtime, marked borrowed: one thread-local access
/// and no reference-count change, so threads of a host calling into one runtime write no
/// shared cache line here. Otherwise (a first or changed handle while a call on this
/// thread is using the cache, or a thread being torn down) it holds its own reference.
pub(crate) struct RuntimeRef {
    /// The runtime; when `cache` is null, a reference of its own (`Arc::into_raw`).
    runtime: *const FfiRuntime,
    /// The thread's cache whose `borrowed` count this reference holds; null when owned.
    cache: *const Fast,
}

impl std::ops::Deref for RuntimeRef {
    type Target = FfiRuntime;
    #[inline]
    fn deref(&self) -> &FfiRuntime {
        // SAFETY: `runtime` is a reference of this RuntimeRef's own, or the cached runtime,
        // which is not replaced or cleared while this reference holds the cache's
        // `borrowed` count.
        unsafe { &*self.runtime }
    }
}

impl Drop for RuntimeRef {
    #[inline]
    fn drop(&mut self) {
        if !self.cache.is_null() {
            // SAFETY: the cache is the calling thread's (a RuntimeRef is neither Send nor
            // Sync, raw pointers inside) and, having no destructor, lives as long as the
            // thread.
            let c = unsafe { &*self.cache };
            c.borrowed.set(c.borrowed.get() - 1);
        } else {
            // SAFETY: an owned RuntimeRef holds one reference from `Arc::into_raw`.
            drop(unsafe { Arc::from_raw(self.runtime) });
        }
    }
}

/// The runtime a handle names, kept alive for the caller's use.
#[inline]
pub(crate) fn get(handle: u64) -> FfiResult<RuntimeRef> {
    // The low half is index + 1: 0 wraps to an index beyond the table.
    let index = (handle as u32).wrapping_sub(1) as usize;
    match LIVE.get(index) {
        Some(live) if live.load(Ordering::Acquire) == (handle >> 32) as u32 => {}
        _ => return Err(invalid(handle)),
    }
    let hit = FAST.with(|f| {
        if f.handle.get() != handle {
            return None;
        }
        f.borrowed.set(f.borrowed.get() + 1);
        Some(RuntimeRef {
            runtime: f.runtime.get(),
            cache: f,
        })
    });
    match hit {
        Some(r) => Ok(r),
        None => get_uncached(handle),
    }
}

/// A lookup the thread's cache does not answer: from the registry, caching the runtime
/// unless a call on this thread is using the cache.
#[cold]
#[inline(never)]
fn get_uncached(handle: u64) -> FfiResult<RuntimeRef> {
    let (index, generation) = split(handle).ok_or_else(|| invalid(handle))?;
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
    let replaced = OWNED.try_with(|o| {
        FAST.with(|f| {
            if f.borrowed.get() != 0 {
                return None;
            }
            let old = o.0.replace(Some(runtime.clone()));
            f.handle.set(handle);
            f.runtime.set(Arc::as_ptr(&runtime));
            f.borrowed.set(1);
            Some((
                RuntimeRef {
                    runtime: Arc::as_ptr(&runtime),
                    cache: f,
                },
                old,
            ))
        })
    });
    match replaced {
        // The previous runtime's reference goes last, with the cache consistent and
        // borrowed: its drop may be the runtime's last and run host code that calls in.
        Ok(Some((r, old))) => {
            drop(old);
            Ok(r)
        }
        _ => Ok(RuntimeRef {
            runtime: Arc::into_raw(runtime),
            cache: std::ptr::null(),
        }),
    }
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
        LIVE[index].store(0, Ordering::Release);
        r.free.push(index as u32);
        rt
    };
    // Forget the cached reference unless a call on this thread is using it (then the
    // next lookup's generation check rejects the handle, and the entry goes when replaced).
    let _ = OWNED.try_with(|o| {
        let cached = FAST.with(|f| {
            if f.borrowed.get() == 0 && f.handle.get() == handle {
                f.handle.set(0);
                f.runtime.set(std::ptr::null());
                true
            } else {
                false
            }
        });
        if cached {
            // Not the runtime's last reference: `rt` holds one.
            drop(o.0.take());
        }
    });
    Ok(rt)
}
