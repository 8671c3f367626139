//! The admission view's table: the Spots active on this node, found by id. Each Spot is
//! its own key (its id is inside it), so a slot of the table is one pointer rather than
//! an id and a pointer — the table has a slot per active Spot and some room besides.

use std::borrow::Borrow;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use spot_timer_core::U64Hashing;

use super::LocalSpot;
use crate::kind::SpotId;

/// A Spot in the table, hashed and compared by its id (so the table is searched by id).
struct ById(Arc<LocalSpot>);

impl Hash for ById {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.id.hash(state);
    }
}

impl PartialEq for ById {
    fn eq(&self, other: &Self) -> bool {
        self.0.id == other.0.id
    }
}

impl Eq for ById {}

impl Borrow<SpotId> for ById {
    fn borrow(&self) -> &SpotId {
        &self.0.id
    }
}

/// The Spots active on this node, by id.
#[derive(Default)]
pub(super) struct ActiveSpots(HashSet<ById, U64Hashing>);

impl ActiveSpots {
    pub(super) fn get(&self, id: &SpotId) -> Option<&Arc<LocalSpot>> {
        self.0.get(id).map(|s| &s.0)
    }

    /// Adds `spot`, in place of any Spot of its id.
    pub(super) fn insert(&mut self, spot: Arc<LocalSpot>) {
        self.0.replace(ById(spot));
    }

    pub(super) fn remove(&mut self, id: &SpotId) {
        self.0.remove(id);
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Arc<LocalSpot>> {
        self.0.iter().map(|s| &s.0)
    }
}
