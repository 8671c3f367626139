//! Handles of stores and nodes: generation-tagged integers in a small table, so a null,
//! freed or made-up handle is `SPOT_E_INVALID_HANDLE`, never a dangling pointer. (Runtime
//! handles have their own, lock-free table: they sit on the hot path of every timer
//! call.)

use std::sync::{Arc, Mutex, MutexGuard};

use crate::boundary::{Failure, FfiResult};
use crate::status::SPOT_E_INVALID_HANDLE;

/// A handle is `tag << 56 | generation << 32 | (index + 1)`: the tag tells the tables
/// apart (a store handle is never a node handle), the generation (24 bits) tells an entry's
/// occupants apart.
pub(crate) struct HandleTable<T> {
    entries: Mutex<Vec<(u32, Option<Arc<T>>)>>,
    what: &'static str,
    tag: u8,
}

const GENERATION_MASK: u32 = (1 << 24) - 1;

impl<T> HandleTable<T> {
    pub const fn new(what: &'static str, tag: u8) -> Self {
        Self {
            entries: Mutex::new(Vec::new()),
            what,
            tag,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<(u32, Option<Arc<T>>)>> {
        // Only Vec operations run under the lock: a poisoned table is intact.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn insert(&self, value: Arc<T>) -> u64 {
        let mut e = self.lock();
        let index = match e.iter().position(|(_, v)| v.is_none()) {
            Some(i) => i,
            None => {
                e.push((0, None));
                e.len() - 1
            }
        };
        let entry = &mut e[index];
        entry.0 = (entry.0 + 1) & GENERATION_MASK;
        entry.0 = entry.0.max(1);
        entry.1 = Some(value);
        (u64::from(self.tag) << 56) | (u64::from(entry.0) << 32) | (index as u64 + 1)
    }

    fn slot(&self, handle: u64) -> Option<(usize, u32)> {
        let low = handle as u32;
        let tag = (handle >> 56) as u8;
        (low != 0 && tag == self.tag)
            .then(|| ((low - 1) as usize, (handle >> 32) as u32 & GENERATION_MASK))
    }

    fn invalid(&self, handle: u64) -> Failure {
        Failure::new(
            SPOT_E_INVALID_HANDLE,
            format!(
                "{} handle {handle:#x} is not live (null, freed or never valid)",
                self.what
            ),
        )
    }

    pub fn get(&self, handle: u64) -> FfiResult<Arc<T>> {
        let (i, generation) = self.slot(handle).ok_or_else(|| self.invalid(handle))?;
        match self.lock().get(i) {
            Some((g, Some(v))) if *g == generation => Ok(v.clone()),
            _ => Err(self.invalid(handle)),
        }
    }

    pub fn remove(&self, handle: u64) -> FfiResult<Arc<T>> {
        let (i, generation) = self.slot(handle).ok_or_else(|| self.invalid(handle))?;
        match self.lock().get_mut(i) {
            Some((g, v @ Some(_))) if *g == generation => Ok(v.take().expect("checked")),
            _ => Err(self.invalid(handle)),
        }
    }
}
