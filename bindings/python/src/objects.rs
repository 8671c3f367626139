//! The handlers of a runtime's live timers, kept where the garbage collector can see them
//! (`Runtime.__traverse__`), indexed by the `u64` payload the core carries for each timer.
//! Only attached threads touch the table (see `gil_cell`); release callbacks, which the
//! thread ending a generation takes, are kept apart (`runtime::Inner::releases`).
//!
//! A payload is `generation << 32 | index` into a dense table, so finding a record's handler
//! is an array index, not a hash lookup. An entry's generation moves on when it is removed:
//! a payload of an ended timer never finds the next timer's objects. An entry counts the
//! timer generations that carry its payload (two for a while after a reset that could not
//! take the slot in place) and goes with the last.

use std::collections::HashMap;

use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::PyTraverseError;

/// 16 bytes per live timer.
struct Entry {
    generation: u32,
    carriers: u32,
    handler: Option<Py<PyAny>>,
}

#[derive(Default)]
pub struct PyObjects {
    entries: Vec<Entry>,
    free: Vec<u32>,
    /// The key objects of timers whose key is not a plain int (what `Tick.key` returns).
    keys: HashMap<u64, Py<PyAny>>,
    pub exception_handler: Option<Py<PyAny>>,
}

fn split(id: u64) -> (usize, u32) {
    ((id & 0xffff_ffff) as usize, (id >> 32) as u32)
}

impl PyObjects {
    /// Keeps a new timer's objects; returns the payload that names them.
    pub fn insert(&mut self, handler: Py<PyAny>) -> u64 {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.entries.push(Entry {
                    generation: 0,
                    carriers: 0,
                    handler: None,
                });
                (self.entries.len() - 1) as u32
            }
        };
        let e = &mut self.entries[index as usize];
        e.handler = Some(handler);
        e.carriers = 1;
        (u64::from(e.generation) << 32) | u64::from(index)
    }

    fn entry(&self, id: u64) -> Option<&Entry> {
        let (index, generation) = split(id);
        self.entries
            .get(index)
            .filter(|e| e.generation == generation && e.handler.is_some())
    }

    pub fn handler(&self, id: u64) -> Option<&Py<PyAny>> {
        self.entry(id).and_then(|e| e.handler.as_ref())
    }

    /// Keeps the key object of timer `id` (a key that is not a plain int).
    pub fn set_key(&mut self, id: u64, key: Py<PyAny>) {
        self.keys.insert(id, key);
    }

    /// The key object of timer `id`, if its key is not a plain int.
    pub fn key(&self, id: u64) -> Option<&Py<PyAny>> {
        if self.keys.is_empty() {
            return None;
        }
        self.keys.get(&id)
    }

    /// One more generation carries `id`; false if its objects are gone.
    pub fn add_carrier(&mut self, id: u64) -> bool {
        let (index, generation) = split(id);
        match self.entries.get_mut(index) {
            Some(e) if e.generation == generation && e.handler.is_some() => {
                e.carriers += 1;
                true
            }
            _ => false,
        }
    }

    /// Starts fetching the line of timer `id`'s entry: a cancel calls it before the core's
    /// end of the timer, so that the two cold lines it touches (the slot's, this entry's)
    /// are fetched at once rather than one after the other.
    #[inline]
    pub fn prefetch(&self, id: u64) {
        #[cfg(target_arch = "x86_64")]
        if let Some(e) = self.entries.get(split(id).0) {
            // SAFETY: a prefetch is a hint about a live element's address; it reads nothing.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    (e as *const Entry).cast(),
                )
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = id;
    }

    /// A generation carrying `id` ended: the last one's end forgets the timer's objects
    /// (its handler and key object), which the caller drops (attached, outside the cell).
    pub fn remove(&mut self, id: u64) -> [Option<Py<PyAny>>; 2] {
        let (index, generation) = split(id);
        let Some(e) = self.entries.get_mut(index) else {
            return [None, None];
        };
        if e.generation != generation || e.handler.is_none() {
            return [None, None];
        }
        e.carriers -= 1;
        if e.carriers > 0 {
            return [None, None];
        }
        let handler = e.handler.take();
        e.generation = e.generation.wrapping_add(1);
        self.free.push(index as u32);
        let key = if self.keys.is_empty() {
            None
        } else {
            self.keys.remove(&id)
        };
        [handler, key]
    }

    /// Forgets every timer's objects (the runtime closed: every generation ended).
    pub fn clear_timers(&mut self) -> Vec<Py<PyAny>> {
        let mut out = Vec::new();
        for (i, e) in self.entries.iter_mut().enumerate() {
            if e.handler.is_some() {
                out.extend(e.handler.take());
                e.generation = e.generation.wrapping_add(1);
                self.free.push(i as u32);
            }
        }
        out.extend(self.keys.drain().map(|(_, k)| k));
        out
    }

    /// Handlers held (diagnostics and tests).
    pub fn held(&self) -> usize {
        self.entries.iter().filter(|e| e.handler.is_some()).count()
    }

    pub fn visit(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        for e in &self.entries {
            visit.call(&e.handler)?;
        }
        for k in self.keys.values() {
            visit.call(k)?;
        }
        visit.call(&self.exception_handler)
    }
}
