//! An array that grows one fixed-size page at a time behind a two-level directory.
//! Elements never move (other threads keep references into it), and what it holds beyond
//! the elements in use is less than a page, where an array of doubling chunks keeps up to
//! as much again (the owner table of 100,000 owners held room for 131,000).
//!
//! Index `i` is element `i % PAGE` of page `i / PAGE`; pages are grouped `PAGES` to a
//! directory, and `DIRECTORIES` directories cover every index below
//! `PAGE * PAGES * DIRECTORIES`. Directories and pages exist once something asked for an
//! index in them.

use std::sync::atomic::AtomicPtr;
use std::sync::atomic::Ordering::{AcqRel, Acquire};

pub(crate) const PAGE: usize = 256;
const PAGES: usize = 256;
const DIRECTORIES: usize = 256;

/// Indexes below this exist.
pub(crate) const CAPACITY: usize = PAGE * PAGES * DIRECTORIES;

type Page<T> = [T; PAGE];
type Directory<T> = [AtomicPtr<Page<T>>; PAGES];

/// Every level is a plain pointer, null until it exists: a lookup is two loads and the
/// arithmetic of three indexes.
pub(crate) struct PagedArray<T> {
    directories: [AtomicPtr<Directory<T>>; DIRECTORIES],
}

// SAFETY: the array owns its pages of `T`; sharing it shares `&T`s.
unsafe impl<T: Sync> Sync for PagedArray<T> {}
unsafe impl<T: Send> Send for PagedArray<T> {}

impl<T> Default for PagedArray<T> {
    fn default() -> Self {
        Self {
            directories: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
        }
    }
}

/// (directory, page in it, element in the page) of an index.
#[inline]
fn locate(index: usize) -> (usize, usize, usize) {
    (index / (PAGE * PAGES), (index / PAGE) % PAGES, index % PAGE)
}

/// A boxed array built on the heap, never on the stack.
fn boxed_array<E, const N: usize>(make: impl FnMut(usize) -> E) -> Box<[E; N]> {
    let items: Box<[E]> = (0..N).map(make).collect();
    items
        .try_into()
        .unwrap_or_else(|_| unreachable!("built with N items"))
}

/// The level behind `slot`, made with `make` if it does not exist yet (another thread
/// that got there first keeps its own; this one's is dropped).
fn get_or_install<L>(slot: &AtomicPtr<L>, make: impl FnOnce() -> Box<L>) -> &L {
    let mut p = slot.load(Acquire);
    if p.is_null() {
        let fresh = Box::into_raw(make());
        p = match slot.compare_exchange(std::ptr::null_mut(), fresh, AcqRel, Acquire) {
            Ok(_) => fresh,
            Err(existing) => {
                // SAFETY: `fresh` was never published.
                drop(unsafe { Box::from_raw(fresh) });
                existing
            }
        };
    }
    // SAFETY: a published level lives as long as the array.
    unsafe { &*p }
}

impl<T> PagedArray<T> {
    /// The element at `index`, if its page exists.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&T> {
        let (d, p, e) = locate(index);
        let dir = self.directories.get(d)?.load(Acquire);
        if dir.is_null() {
            return None;
        }
        // SAFETY: a published directory lives as long as the array.
        let page = unsafe { &*dir }[p].load(Acquire);
        if page.is_null() {
            return None;
        }
        // SAFETY: a published page lives as long as the array.
        Some(unsafe { &(*page)[e] })
    }

    /// Visits every element of every page that exists, in index order.
    pub fn for_each(&self, mut f: impl FnMut(usize, &T)) {
        for (d, dir) in self.directories.iter().enumerate() {
            let dir = dir.load(Acquire);
            if dir.is_null() {
                continue;
            }
            // SAFETY: as in `get`.
            for (p, page) in unsafe { &*dir }.iter().enumerate() {
                let page = page.load(Acquire);
                if page.is_null() {
                    continue;
                }
                let first = (d * PAGES + p) * PAGE;
                // SAFETY: as in `get`.
                for (e, item) in unsafe { &*page }.iter().enumerate() {
                    f(first + e, item);
                }
            }
        }
    }
}

impl<T> Drop for PagedArray<T> {
    fn drop(&mut self) {
        for dir in self.directories.iter() {
            let dir = dir.load(Acquire);
            if dir.is_null() {
                continue;
            }
            // SAFETY: the array is going away: nobody else holds its levels, each made
            // by `Box::into_raw`.
            let dir = unsafe { Box::from_raw(dir) };
            for page in dir.iter() {
                let page = page.load(Acquire);
                if !page.is_null() {
                    // SAFETY: as above.
                    drop(unsafe { Box::from_raw(page) });
                }
            }
        }
    }
}

impl<T: Default> PagedArray<T> {
    /// The element at `index` (below `CAPACITY`), making its page (default values) if
    /// needed.
    pub fn ensure(&self, index: usize) -> &T {
        assert!(index < CAPACITY, "index {index} beyond the paged array");
        let (d, p, e) = locate(index);
        let dir = get_or_install(&self.directories[d], || {
            boxed_array(|_| AtomicPtr::new(std::ptr::null_mut()))
        });
        let page = get_or_install(&dir[p], || boxed_array(|_| T::default()));
        &page[e]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_covers_every_index_once() {
        let mut seen = std::collections::HashSet::new();
        let span = if cfg!(miri) {
            3 * PAGE
        } else {
            4 * PAGE * PAGES
        };
        for i in (0..span).chain(CAPACITY - 3 * PAGE..CAPACITY) {
            let (d, p, e) = locate(i);
            assert!(d < DIRECTORIES && p < PAGES && e < PAGE, "{i}");
            assert!(seen.insert((d, p, e)), "{i} shares a place");
        }
    }

    #[test]
    fn elements_stay_put_and_pages_appear_on_demand() {
        let a: PagedArray<std::sync::atomic::AtomicU64> = PagedArray::default();
        assert!(a.get(0).is_none());
        let first = a.ensure(3) as *const _;
        a.ensure(3).store(7, std::sync::atomic::Ordering::Relaxed);
        // A page far away, then the first one again: nothing moved.
        let far = PAGE * PAGES + 5;
        a.ensure(far).store(9, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(a.ensure(3) as *const _, first);
        assert_eq!(
            a.get(3).unwrap().load(std::sync::atomic::Ordering::Relaxed),
            7
        );
        assert_eq!(
            a.get(far)
                .unwrap()
                .load(std::sync::atomic::Ordering::Relaxed),
            9
        );
        assert!(a.get(PAGE).is_none(), "page 1 was never asked for");
        let mut visited = Vec::new();
        a.for_each(|i, v| {
            if v.load(std::sync::atomic::Ordering::Relaxed) != 0 {
                visited.push(i);
            }
        });
        assert_eq!(visited, vec![3, far]);
        let mut count = 0;
        a.for_each(|_, _| count += 1);
        assert_eq!(count, 2 * PAGE, "two pages exist");
    }

    #[test]
    #[should_panic(expected = "beyond the paged array")]
    fn an_index_past_capacity_is_refused() {
        let a: PagedArray<u8> = PagedArray::default();
        a.ensure(CAPACITY);
    }
}
