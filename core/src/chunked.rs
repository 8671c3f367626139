//! An array that grows in chunks that never move: element addresses stay valid for the
//! life of the array, so other threads (and C hosts) may keep pointers into it.
//!
//! Every chunk holds `1 << CHUNK_BITS` elements and a flat directory holds one pointer per
//! possible chunk, so finding an element is a shift, one load and an add — the slot
//! table is read this way on every operation. The directory is sized for the largest
//! index the array serves (`limit`), a few KiB for the timer table.
//!
//! Chunks of types whose all-zero bytes are a valid value are mapped anonymously: their
//! pages cost memory only once touched, so the resident size follows what is used. They
//! are kept off transparent huge pages (also where the system's setting is `always`): a
//! huge page is zeroed (and, when memory is fragmented, compacted for) inside one page
//! fault, which put stalls of 0.2–7 ms into single registrations once per 32,768 new
//! slots; a helper taking those faults ahead of use would hold up to 2 MiB of unused
//! slots and still fall behind a thread registering at full speed. Small pages fault in
//! 4 KiB steps, which `SlotTable::pretouch` takes off the registering threads.

use std::ptr::NonNull;
use std::sync::atomic::AtomicPtr;
use std::sync::atomic::Ordering::{AcqRel, Acquire};

/// log2 of the elements per chunk. Under Miri and loom, whose every byte or atomic costs
/// far more, chunks are small.
#[cfg(not(any(miri, spot_loom)))]
const CHUNK_BITS: u32 = 16;
#[cfg(any(miri, spot_loom))]
const CHUNK_BITS: u32 = 10;
const CHUNK: usize = 1 << CHUNK_BITS;

/// Types whose all-zero bit pattern is a valid, ready-to-use value.
///
/// # Safety
/// Implement only for types made of atomics, integers and `MaybeUninit`.
pub(crate) unsafe trait Zeroable {}

// SAFETY: atomic integers.
unsafe impl Zeroable for std::sync::atomic::AtomicU64 {}
unsafe impl Zeroable for std::sync::atomic::AtomicU8 {}

/// How a chunk's memory was obtained, so that it is given back the same way.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Backing {
    /// A private anonymous mapping (zeroed pages).
    Mapped,
    /// A boxed slice of `CHUNK` default values.
    Boxed,
    /// Zero-sized elements: no memory.
    None,
}

pub(crate) struct ChunkedArray<T> {
    /// One pointer per chunk, null until the chunk exists.
    directory: Box<[AtomicPtr<T>]>,
    backing: Backing,
}

// SAFETY: the array owns its chunks of `T`; sharing it shares `&T`s.
unsafe impl<T: Sync> Sync for ChunkedArray<T> {}
unsafe impl<T: Send> Send for ChunkedArray<T> {}

impl<T> ChunkedArray<T> {
    /// An array for indexes below `limit`. Nothing but the directory is allocated.
    pub fn new(limit: usize) -> Self {
        let chunks = limit.div_ceil(CHUNK).max(1);
        let layout = std::alloc::Layout::array::<AtomicPtr<T>>(chunks).expect("directory size");
        // SAFETY: a non-empty layout; all-zero bytes are a null `AtomicPtr`, and the box
        // takes the allocation over with the same layout.
        let directory = unsafe {
            let p = std::alloc::alloc_zeroed(layout).cast::<AtomicPtr<T>>();
            if p.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, chunks))
        };
        Self {
            directory,
            backing: if std::mem::size_of::<T>() == 0 {
                Backing::None
            } else {
                Backing::Boxed
            },
        }
    }

    /// The element at `index`, if its chunk exists.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&T> {
        let chunk = self.directory.get(index >> CHUNK_BITS)?.load(Acquire);
        if chunk.is_null() {
            return None;
        }
        // SAFETY: a published chunk holds CHUNK initialised elements and lives as long
        // as the array; the offset is below CHUNK.
        Some(unsafe { &*chunk.add(index & (CHUNK - 1)) })
    }

    /// Makes chunk `c` exist with `make` (which returns an initialised chunk), unless
    /// another thread got there first (then its chunk is kept and this one given back).
    #[cold]
    fn install(&self, c: usize, make: impl FnOnce() -> NonNull<T>) -> *mut T {
        let fresh = make().as_ptr();
        match self.directory[c].compare_exchange(std::ptr::null_mut(), fresh, AcqRel, Acquire) {
            Ok(_) => fresh,
            Err(existing) => {
                // SAFETY: `fresh` was never published.
                unsafe { self.free_chunk(fresh) };
                existing
            }
        }
    }

    #[inline]
    fn ensure_with(&self, index: usize, make: impl FnOnce() -> NonNull<T>) -> &T {
        let c = index >> CHUNK_BITS;
        let mut chunk = self.directory[c].load(Acquire);
        if chunk.is_null() {
            chunk = self.install(c, make);
        }
        // SAFETY: as in `get`.
        unsafe { &*chunk.add(index & (CHUNK - 1)) }
    }

    /// Visits every element below `end` whose chunk exists, in index order (elements
    /// beyond `end` are not read: their pages need not exist).
    pub fn for_each_below(&self, end: usize, mut f: impl FnMut(usize, &T)) {
        for (c, p) in self.directory.iter().enumerate() {
            let first = c << CHUNK_BITS;
            if first >= end {
                break;
            }
            let chunk = p.load(Acquire);
            if chunk.is_null() {
                continue;
            }
            for i in 0..CHUNK.min(end - first) {
                // SAFETY: i < CHUNK.
                f(first + i, unsafe { &*chunk.add(i) });
            }
        }
    }

    /// # Safety
    /// `chunk` came from this array's `make` and is not reachable any more.
    unsafe fn free_chunk(&self, chunk: *mut T) {
        let elements = std::ptr::slice_from_raw_parts_mut(chunk, CHUNK);
        match self.backing {
            Backing::Mapped => {
                std::ptr::drop_in_place(elements);
                libc::munmap(chunk.cast(), CHUNK * std::mem::size_of::<T>());
            }
            Backing::Boxed => drop(Box::from_raw(elements)),
            Backing::None => {}
        }
    }
}

impl<T> Drop for ChunkedArray<T> {
    fn drop(&mut self) {
        for p in self.directory.iter() {
            let chunk = p.load(Acquire);
            if !chunk.is_null() {
                // SAFETY: the array is going away; nobody else holds the chunk.
                unsafe { self.free_chunk(chunk) };
            }
        }
    }
}

#[cfg(any(spot_loom, test))]
impl<T: Default> ChunkedArray<T> {
    /// The element at `index`, allocating its chunk (default values) if needed: for the
    /// loom build, whose atomics cannot be mapped zeroed.
    pub fn ensure(&self, index: usize) -> &T {
        debug_assert!(self.backing != Backing::Mapped);
        self.ensure_with(index, || {
            let b: Box<[T]> = (0..CHUNK).map(|_| T::default()).collect();
            NonNull::new(Box::into_raw(b).cast()).expect("box pointer")
        })
    }
}

impl<T: Zeroable> ChunkedArray<T> {
    /// An array of zeroable elements for indexes below `limit`: its chunks are mapped.
    pub fn zeroed(limit: usize) -> Self {
        let mut a = Self::new(limit);
        if a.backing == Backing::Boxed {
            a.backing = Backing::Mapped;
        }
        a
    }

    /// Faults in the pages of elements `first..end` (mapping their chunks) without
    /// writing them: `MADV_POPULATE_WRITE` makes each missing page as a write fault would
    /// and leaves present pages and every byte as they are, so other threads may use the
    /// elements meanwhile. False where the kernel does not know that advice (before Linux
    /// 5.14): then nothing was faulted in.
    pub fn populate(&self, first: usize, end: usize) -> bool {
        let size = std::mem::size_of::<T>();
        if size == 0 || first >= end {
            return true;
        }
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as usize;
        let mut i = first;
        while i < end {
            // One chunk at a time: chunks are separate mappings.
            let stop = end.min(((i >> CHUNK_BITS) + 1) << CHUNK_BITS);
            let from = self.ensure_zeroed(i) as *const T as usize;
            let to = self.ensure_zeroed(stop - 1) as *const T as usize + size;
            let from = from - from % page;
            // SAFETY: advice on part of a chunk this array mapped (the chunk starts on a
            // page, so the aligned-down start is still inside it); it changes no byte.
            let r = unsafe {
                libc::madvise(
                    from as *mut libc::c_void,
                    to - from,
                    libc::MADV_POPULATE_WRITE,
                )
            };
            if r != 0 {
                return false;
            }
            i = stop;
        }
        true
    }

    /// The element at `index`, mapping its chunk (zeroed, untouched pages) if needed.
    #[inline]
    pub fn ensure_zeroed(&self, index: usize) -> &T {
        debug_assert!(self.backing != Backing::Boxed);
        self.ensure_with(index, || {
            if std::mem::size_of::<T>() == 0 {
                // Zero-sized elements need no memory (a dangling pointer is their address).
                return NonNull::dangling();
            }
            let bytes = CHUNK * std::mem::size_of::<T>();
            // SAFETY: an anonymous private mapping; checked below.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    bytes,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert!(p != libc::MAP_FAILED, "out of memory mapping {bytes} bytes");
            // SAFETY: advice on the mapping just made; failure is harmless (a kernel
            // without transparent huge pages). Miri does not model madvise.
            #[cfg(not(miri))]
            unsafe {
                libc::madvise(p, bytes, libc::MADV_NOHUGEPAGE)
            };
            assert!((p as usize).is_multiple_of(std::mem::align_of::<T>()));
            NonNull::new(p.cast()).expect("mmap result")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

    #[test]
    fn elements_stay_put() {
        let a: ChunkedArray<AtomicU64> = ChunkedArray::new(4 * CHUNK);
        let first = a.ensure(0) as *const _;
        for i in 0..(CHUNK + 1000) {
            a.ensure(i).store(i as u64, Relaxed);
        }
        assert_eq!(first, a.get(0).unwrap() as *const _);
        let mut n = 0;
        a.for_each_below(CHUNK + 1000, |i, v| {
            assert_eq!(v.load(Relaxed), i as u64);
            n += 1;
        });
        assert_eq!(n, CHUNK + 1000);
        assert!(a.get(3 * CHUNK).is_none(), "a chunk nobody asked for");
        assert!(a.get(100 * CHUNK).is_none(), "beyond the limit");
    }

    #[test]
    fn zeroed_chunks_read_as_zero_and_keep_what_is_written() {
        let a: ChunkedArray<AtomicU64> = ChunkedArray::zeroed(2 * CHUNK);
        assert!(a.get(5).is_none());
        a.ensure_zeroed(CHUNK + 7).store(9, Relaxed);
        assert_eq!(a.get(CHUNK + 6).unwrap().load(Relaxed), 0);
        assert_eq!(a.get(CHUNK + 7).unwrap().load(Relaxed), 9);
        assert!(a.get(7).is_none(), "chunks exist one at a time");
    }

    #[test]
    fn racing_threads_install_one_chunk() {
        let a = std::sync::Arc::new(ChunkedArray::<AtomicU64>::zeroed(CHUNK));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let a = a.clone();
                std::thread::spawn(move || {
                    a.ensure_zeroed(t).store(t as u64 + 1, Relaxed);
                    a.ensure_zeroed(0) as *const AtomicU64 as usize
                })
            })
            .collect();
        let addrs: Vec<usize> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert!(addrs.windows(2).all(|w| w[0] == w[1]), "one chunk for all");
        for t in 0..4 {
            assert_eq!(a.get(t).unwrap().load(Relaxed), t as u64 + 1);
        }
    }
}
