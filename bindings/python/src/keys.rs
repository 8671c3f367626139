//! Timer keys: the core names a timer by a `u64` key. A plain int below `AUTO_KEY_BASE` is
//! its own id; a key given as None gets a fresh id from the upper half; any other hashable
//! (strings, tuples, enum members) is mapped per owner id to such an id, and an id back to
//! the key a `Timer` reports. The maps are Python dicts, so a key's own hash and equality
//! decide; they go when the owner is released.
//!
//! Every `GilCell` closure here only hands out or takes the dicts: the dict operations,
//! which may run a key's `__hash__` / `__eq__`, run outside it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::exceptions::PyTypeError;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::PyTraverseError;

use crate::errors::{fail, Exc};
use crate::gil_cell::GilCell;

/// Keys that are not plain non-negative ints below 2^63 get ids from the upper half.
pub const AUTO_KEY_BASE: u64 = 1 << 63;

/// One owner id's maps: key → id, and id → key for the keys a `Timer` does not keep itself.
struct OwnerKeys {
    ids: Py<PyDict>,
    names: Py<PyDict>,
}

/// The maps of every owner id that registered such a key.
#[derive(Default)]
struct KeyMaps {
    by_owner: HashMap<u64, OwnerKeys>,
}

impl KeyMaps {
    fn dicts(&mut self, py: Python<'_>, owner: u64) -> (Py<PyDict>, Py<PyDict>) {
        let k = self.by_owner.entry(owner).or_insert_with(|| OwnerKeys {
            ids: PyDict::new(py).unbind(),
            names: PyDict::new(py).unbind(),
        });
        (k.ids.clone_ref(py), k.names.clone_ref(py))
    }

    /// Takes owner `owner`'s maps out (the caller drops them outside the cell).
    fn remove(&mut self, owner: u64) -> Option<OwnerKeys> {
        self.by_owner.remove(&owner)
    }

    /// Takes every map out (a close, the garbage collector's clear).
    fn take_all(&mut self) -> HashMap<u64, OwnerKeys> {
        std::mem::take(&mut self.by_owner)
    }

    /// The dicts, for the garbage collector.
    fn visit(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        for k in self.by_owner.values() {
            visit.call(&k.ids)?;
            visit.call(&k.names)?;
        }
        Ok(())
    }
}

/// A runtime's key ids: the next automatic id and the maps of mapped keys.
pub struct Keys {
    next: AtomicU64,
    maps: GilCell<KeyMaps>,
}

impl Default for Keys {
    fn default() -> Self {
        Self {
            next: AtomicU64::new(AUTO_KEY_BASE),
            maps: GilCell::new(KeyMaps::default()),
        }
    }
}

impl Keys {
    /// A fresh id from the upper half (a key given as None).
    pub fn fresh(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// The id of `key` under owner id `owner`: the one it got before, else a fresh one.
    pub fn id_of(&self, py: Python<'_>, owner: u64, key: &Bound<'_, PyAny>) -> PyResult<u64> {
        if let Err(e) = key.hash() {
            if e.is_instance_of::<PyTypeError>(py) {
                let ty = key.get_type().name()?;
                return fail(
                    py,
                    Exc::ArgumentType,
                    format!("key must be hashable, not {ty}"),
                );
            }
            return Err(e);
        }
        let (ids, names) = self.maps.with(py, |k| k.dicts(py, owner));
        let fresh = self.fresh();
        // One dict operation: two threads mapping the same new key get the same id.
        let id: u64 = ids
            .bind(py)
            .call_method1("setdefault", (key, fresh))?
            .extract()?;
        if id == fresh {
            names.bind(py).set_item(fresh, key)?;
        }
        Ok(id)
    }

    /// Files `key` as the name of id `id` (an int subclass, such as an `IntEnum` member,
    /// whose id is its value).
    pub fn name(
        &self,
        py: Python<'_>,
        owner: u64,
        id: u64,
        key: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (_, names) = self.maps.with(py, |k| k.dicts(py, owner));
        names.bind(py).set_item(id, key)
    }

    /// The key id `id` stands for under owner id `owner` (the id itself when none was
    /// filed).
    pub fn key_of(&self, py: Python<'_>, owner: u64, id: u64) -> PyResult<Py<PyAny>> {
        let names = self.maps.with(py, |k| {
            k.by_owner.get(&owner).map(|o| o.names.clone_ref(py))
        });
        if let Some(found) = names
            .map(|n| n.bind(py).get_item(id))
            .transpose()?
            .flatten()
        {
            return Ok(found.unbind());
        }
        Ok(id.into_pyobject(py)?.into_any().unbind())
    }

    /// Forgets owner id `owner`'s maps (its release).
    pub fn forget_owner(&self, py: Python<'_>, owner: u64) {
        let maps = self.maps.with(py, |k| k.remove(owner));
        drop(maps);
    }

    /// Visits the maps for the garbage collector (`__traverse__` of the runtime).
    ///
    /// # Safety
    /// As [`GilCell::during_gc`].
    pub unsafe fn visit_during_gc(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        self.maps.during_gc().visit(visit)
    }

    /// Drops every map for the garbage collector (`__clear__` of the runtime).
    ///
    /// # Safety
    /// As [`GilCell::during_gc`].
    pub unsafe fn clear_during_gc(&self) {
        let maps = self.maps.during_gc().take_all();
        drop(maps);
    }
}
