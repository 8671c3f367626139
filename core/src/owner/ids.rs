//! The map from the host's owner ids to the indexes of the owners the runtime knows. The
//! table stores only indexes (4 bytes and a control byte per bucket); an owner's id is in
//! its entry, which lookups read to compare. Its memory follows the most owners known at
//! once, not every id ever used: removals leave markers that later insertions reuse, and
//! the table keeps room for twice the owners it holds, so a table full of markers is
//! always rehashed in place (hashbrown grows it only when more than half its room is
//! taken by live entries): owner churn never grows it.

use hashbrown::HashTable;

use super::OwnerId;
use crate::hash::hash_u64;

#[derive(Default)]
pub(crate) struct OwnerIds {
    table: HashTable<u32>,
    /// The table's room when it was last sized (its `capacity()` then: no markers yet).
    /// `capacity()` itself shrinks as removals leave markers, so it cannot tell when the
    /// table needs more room.
    room: usize,
}

impl OwnerIds {
    /// The index of owner `id` (`id_of(i)`: the id in entry `i`).
    pub fn get(&self, id: OwnerId, id_of: impl Fn(u32) -> OwnerId) -> Option<u32> {
        self.table.find(hash_u64(id), |&i| id_of(i) == id).copied()
    }

    /// Adds owner `id` at `index` (whose entry already holds `id`); it must not be known.
    pub fn insert(&mut self, id: OwnerId, index: u32, id_of: impl Fn(u32) -> OwnerId) {
        debug_assert_eq!(id_of(index), id);
        let hasher = |&i: &u32| hash_u64(id_of(i));
        let wanted = 2 * (self.table.len() + 1);
        if self.room < wanted {
            self.table.reserve(wanted - self.table.len(), hasher);
            self.room = self.table.capacity();
        }
        // With live entries at most half the room, an insertion that finds the room
        // used up by markers makes hashbrown rehash in place, never grow.
        self.table.insert_unique(hash_u64(id), index, hasher);
    }

    /// Forgets owner `id`.
    pub fn remove(&mut self, id: OwnerId, id_of: impl Fn(u32) -> OwnerId) {
        if let Ok(e) = self.table.find_entry(hash_u64(id), |&i| id_of(i) == id) {
            e.remove();
        }
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_map_to_indexes_through_the_entries() {
        // Entry i holds id 1000 + 7 i.
        let id_of = |i: u32| 1000 + 7 * u64::from(i);
        let mut ids = OwnerIds::default();
        let n = if cfg!(miri) { 500 } else { 10_000 };
        for i in 0..n {
            ids.insert(id_of(i), i, id_of);
        }
        assert_eq!(ids.len(), n as usize);
        let probe = n / 2 + 17;
        assert_eq!(ids.get(id_of(probe), id_of), Some(probe));
        assert_eq!(ids.get(1001, id_of), None);
        ids.remove(id_of(probe), id_of);
        assert_eq!(ids.get(id_of(probe), id_of), None);
        assert_eq!(ids.len(), n as usize - 1);
        ids.remove(5, id_of);
        assert_eq!(ids.len(), n as usize - 1, "an unknown id: nothing removed");
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "safe code, and 200,000 rounds of churn take minutes under Miri"
    )]
    fn churn_does_not_grow_the_table() {
        // Entry i holds id `at[i]`, rewritten as indexes are reused.
        let mut at = vec![0u64; 64];
        let mut ids = OwnerIds::default();
        for (i, slot) in at.iter_mut().enumerate() {
            *slot = i as u64;
            let snapshot = *slot;
            ids.insert(snapshot, i as u32, |j| {
                if j as usize == i {
                    snapshot
                } else {
                    j as u64
                }
            });
        }
        let churn = |ids: &mut OwnerIds, at: &mut Vec<u64>, rounds: std::ops::Range<u64>| {
            for round in rounds {
                let i = (round % 64) as usize;
                let old = at[i];
                ids.remove(old, |j| at[j as usize]);
                at[i] = round * 64 + i as u64;
                let table = &*at;
                ids.insert(at[i], i as u32, |j| table[j as usize]);
                assert_eq!(ids.get(at[i], |j| at[j as usize]), Some(i as u32));
            }
        };
        let buckets = ids.table.capacity();
        assert!(
            (128..=4 * 64).contains(&buckets),
            "room for twice the owners: {buckets}"
        );
        let bytes = ids.table.allocation_size();
        churn(&mut ids, &mut at, 1..200_000);
        assert_eq!(ids.len(), 64);
        assert_eq!(
            ids.table.allocation_size(),
            bytes,
            "new ids in, old out: no growth"
        );
    }
}
