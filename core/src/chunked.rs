//! An array that grows in chunks that never move: element addresses stay valid for the
//! life of the array, so other threads (and C hosts) may keep pointers into it. Chunk `k`
//! holds `BASE << k` elements, so twenty chunk pointers cover every index and a new
//! runtime costs a few hundred bytes, not a directory per possible chunk.
//!
//! Chunks of types whose all-zero bytes are a valid value are mapped anonymously: their
//! pages cost memory only once touched, so the resident size follows what is used.

use std::ptr::NonNull;
use std::sync::OnceLock;

const CHUNKS: usize = 24;
/// Chunks at least this large are offered huge pages.
const HUGE_PAGE: usize = 2 << 20;

/// Types whose all-zero bit pattern is a valid, ready-to-use value.
///
/// # Safety
/// Implement only for types made of atomics, integers and `MaybeUninit`.
pub(crate) unsafe trait Zeroable {}

// SAFETY: atomic integers.
unsafe impl Zeroable for std::sync::atomic::AtomicU64 {}
unsafe impl Zeroable for std::sync::atomic::AtomicU8 {}

struct Chunk<T> {
    ptr: NonNull<T>,
    len: usize,
    mapped: bool,
}

// SAFETY: a chunk is an owned array of `T`; sharing it shares `&T`s.
unsafe impl<T: Sync> Sync for Chunk<T> {}
unsafe impl<T: Send> Send for Chunk<T> {}

impl<T> Drop for Chunk<T> {
    fn drop(&mut self) {
        // SAFETY: `ptr` holds `len` initialised elements allocated as described by `mapped`.
        unsafe {
            let elements = std::ptr::slice_from_raw_parts_mut(self.ptr.as_ptr(), self.len);
            if self.mapped {
                std::ptr::drop_in_place(elements);
                libc::munmap(
                    self.ptr.as_ptr().cast(),
                    self.len * std::mem::size_of::<T>(),
                );
            } else {
                drop(Box::from_raw(elements));
            }
        }
    }
}

pub(crate) struct ChunkedArray<T, const BASE: usize> {
    chunks: [OnceLock<Chunk<T>>; CHUNKS],
}

impl<T, const BASE: usize> Default for ChunkedArray<T, BASE> {
    fn default() -> Self {
        Self {
            chunks: std::array::from_fn(|_| OnceLock::new()),
        }
    }
}

/// (chunk, offset) of an index.
#[inline]
fn locate(base: usize, index: usize) -> (usize, usize) {
    let scaled = index / base + 1;
    let chunk = (usize::BITS - 1 - scaled.leading_zeros()) as usize;
    (chunk, index - base * ((1 << chunk) - 1))
}

impl<T, const BASE: usize> ChunkedArray<T, BASE> {
    /// The element at `index`, if its chunk exists.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&T> {
        let (chunk, offset) = locate(BASE, index);
        let c = self.chunks.get(chunk)?.get()?;
        // SAFETY: offset < len by construction of `locate`.
        Some(unsafe { &*c.ptr.as_ptr().add(offset) })
    }

    #[inline]
    fn ensure_with(&self, index: usize, make: impl FnOnce(usize) -> Chunk<T>) -> &T {
        let (chunk, offset) = locate(BASE, index);
        let c = self.chunks[chunk].get_or_init(|| make(BASE << chunk));
        // SAFETY: as in `get`.
        unsafe { &*c.ptr.as_ptr().add(offset) }
    }

    /// Visits every element of every allocated chunk.
    pub fn for_each(&self, mut f: impl FnMut(usize, &T)) {
        for (k, c) in self.chunks.iter().enumerate() {
            if let Some(c) = c.get() {
                let first = BASE * ((1 << k) - 1);
                for i in 0..c.len {
                    // SAFETY: i < len.
                    f(first + i, unsafe { &*c.ptr.as_ptr().add(i) });
                }
            }
        }
    }
}

#[cfg(any(spot_loom, test))]
impl<T: Default, const BASE: usize> ChunkedArray<T, BASE> {
    /// The element at `index`, allocating its chunk (default values) if needed: for the
    /// loom build, whose atomics cannot be mapped zeroed.
    pub fn ensure(&self, index: usize) -> &T {
        self.ensure_with(index, |len| {
            let b: Box<[T]> = (0..len).map(|_| T::default()).collect();
            let len = b.len();
            Chunk {
                ptr: NonNull::new(Box::into_raw(b).cast()).expect("box pointer"),
                len,
                mapped: false,
            }
        })
    }
}

impl<T: Zeroable, const BASE: usize> ChunkedArray<T, BASE> {
    /// The element at `index`, mapping its chunk (zeroed, untouched pages) if needed.
    #[inline]
    pub fn ensure_zeroed(&self, index: usize) -> &T {
        self.ensure_with(index, |len| {
            let bytes = len * std::mem::size_of::<T>();
            if bytes == 0 {
                // Zero-sized elements need no memory (a dangling pointer is their address).
                return Chunk {
                    ptr: NonNull::dangling(),
                    len,
                    mapped: false,
                };
            }
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
            if bytes >= HUGE_PAGE {
                // Large chunks are filled densely: let the kernel back them with huge pages
                // (a first touch costs one fault per 2 MiB, not per 4 KiB).
                // SAFETY: advice on the mapping just made; failure is harmless.
                unsafe { libc::madvise(p, bytes, libc::MADV_HUGEPAGE) };
            }
            assert!((p as usize).is_multiple_of(std::mem::align_of::<T>()));
            Chunk {
                ptr: NonNull::new(p.cast()).expect("mmap result"),
                len,
                mapped: true,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_covers_every_index_once() {
        let mut expected = (0usize, 0usize);
        for i in 0..10_000 {
            assert_eq!(locate(16, i), expected, "{i}");
            expected.1 += 1;
            if expected.1 == 16 << expected.0 {
                expected = (expected.0 + 1, 0);
            }
        }
    }

    #[test]
    fn elements_stay_put() {
        let a: ChunkedArray<std::sync::atomic::AtomicU64, 4> = ChunkedArray::default();
        let first = a.ensure(0) as *const _;
        for i in 0..1000 {
            a.ensure(i)
                .store(i as u64, std::sync::atomic::Ordering::Relaxed);
        }
        assert_eq!(first, a.get(0).unwrap() as *const _);
        let mut n = 0;
        a.for_each(|i, v| {
            if i < 1000 {
                assert_eq!(v.load(std::sync::atomic::Ordering::Relaxed), i as u64);
                n += 1;
            }
        });
        assert_eq!(n, 1000);
        assert!(a.get(1_000_000).is_none());
    }
}
