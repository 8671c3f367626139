//! The admission view's table: the Spots active on this node, found by id. A slot is one
//! pointer: the id is not stored beside it, since the Spot has it (its timer-runtime
//! owner's id), so the table costs a pointer per active Spot and some room besides.

use std::hash::BuildHasher;
use std::sync::Arc;

use hashbrown::hash_table::{Entry, HashTable};
use spot_timer_core::U64Hashing;

use super::LocalSpot;
use crate::kind::SpotId;

/// The Spots active on this node, by id.
#[derive(Default)]
pub(super) struct ActiveSpots(HashTable<Arc<LocalSpot>>);

fn hash(id: SpotId) -> u64 {
    U64Hashing.hash_one(id.0)
}

impl ActiveSpots {
    pub(super) fn get(&self, id: SpotId) -> Option<&Arc<LocalSpot>> {
        self.0.find(hash(id), |s| s.id() == id)
    }

    /// Adds `spot`, in place of any Spot of its id.
    pub(super) fn insert(&mut self, spot: Arc<LocalSpot>) {
        let id = spot.id();
        match self.0.entry(hash(id), |s| s.id() == id, |s| hash(s.id())) {
            Entry::Occupied(mut e) => *e.get_mut() = spot,
            Entry::Vacant(e) => {
                e.insert(spot);
            }
        }
    }

    /// Removes `spot` if it is the one its id names (a later activation of the same id
    /// stays).
    pub(super) fn remove_same(&mut self, spot: &Arc<LocalSpot>) {
        let id = spot.id();
        if let Ok(e) = self
            .0
            .find_entry(hash(id), |s| s.id() == id && Arc::ptr_eq(s, spot))
        {
            e.remove();
        }
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Arc<LocalSpot>> {
        self.0.iter()
    }
}
