//! What an owner's lock guards: the slot of each of its keys' current generation, the
//! timers waiting for its gate, how many of its generations are still ending, and whether
//! the host released it.
//!
//! Most owners hold one timer at a time (an actor's tick, a request timeout) and never
//! queue at their gate, so the book is 16 bytes: one key inline, two counters, and a
//! pointer to a spill that exists only once an owner holds a second key or a timer waits
//! for its gate. An owner with no timer or one holds no allocation, and registering and
//! cancelling its timer again and again allocates nothing. The spill is kept when it
//! empties (it is freed with the owner), so owners that churn many timers do not re-grow
//! it every round. Keys are hashed by key; the key itself lives in the slot, so lookups
//! take the slot table's word through closures.

use std::collections::VecDeque;

use hashbrown::HashTable;

use super::key_sizes::KeyTableSizes;

/// `one` when no key is inline (slot indexes stay below `MAX_TIMERS`).
const NO_SLOT: u32 = u32::MAX;
/// The `live` bit of a released owner.
const RELEASED: u32 = 1 << 31;

/// The part of the book few owners need.
#[derive(Default)]
struct Spill {
    /// Keys beyond the first (all of them once this holds any: `one` is then empty).
    keys: HashTable<u32>,
    /// Slots waiting for the gate (or parked after a deferral), oldest first.
    waiters: VecDeque<u32>,
}

/// See the module documentation.
pub(crate) struct OwnerBook {
    spill: Option<Box<Spill>>,
    /// The slot of the owner's only key, while its key table holds none (`NO_SLOT`: none).
    one: u32,
    /// Generations of this owner that have not finished ending, and `RELEASED`.
    live: u32,
}

impl Default for OwnerBook {
    fn default() -> Self {
        Self {
            spill: None,
            one: NO_SLOT,
            live: 0,
        }
    }
}

impl OwnerBook {
    fn table(&self) -> Option<&HashTable<u32>> {
        self.spill
            .as_ref()
            .map(|s| &s.keys)
            .filter(|t| !t.is_empty())
    }

    /// Maps the key of slot `index` (hash `hash`; `same_key(s)`: slot `s` holds the same
    /// key) to `index`. Returns the slot it named before, if any. A table that must grow
    /// grows to the room `sizes` says.
    #[inline]
    pub fn upsert_key(
        &mut self,
        hash: u64,
        index: u32,
        same_key: impl Fn(u32) -> bool,
        hasher: impl Fn(&u32) -> u64,
        sizes: &KeyTableSizes,
    ) -> Option<u32> {
        if self.one != NO_SLOT {
            if same_key(self.one) {
                return Some(std::mem::replace(&mut self.one, index));
            }
            // A second key: both go to the table.
            let first = std::mem::replace(&mut self.one, NO_SLOT);
            let t = &mut self.spill.get_or_insert_with(Box::default).keys;
            if t.capacity() < 2 {
                t.reserve(sizes.grow_from(1), &hasher);
            }
            t.insert_unique(hasher(&first), first, &hasher);
            t.insert_unique(hash, index, &hasher);
            return None;
        }
        match self.spill.as_mut().map(|s| &mut s.keys) {
            Some(t) if !t.is_empty() => {
                if t.len() == t.capacity() {
                    t.reserve(sizes.grow_from(t.len()) - t.len(), &hasher);
                }
                match t.entry(hash, |&s| same_key(s), hasher) {
                    hashbrown::hash_table::Entry::Occupied(mut e) => {
                        Some(std::mem::replace(e.get_mut(), index))
                    }
                    hashbrown::hash_table::Entry::Vacant(e) => {
                        e.insert(index);
                        None
                    }
                }
            }
            _ => {
                self.one = index;
                None
            }
        }
    }

    /// If the key (hash `hash`) names slot `index`: makes it name `to` instead, or removes
    /// it (`to` None). False when the key names another slot or none.
    #[inline]
    pub fn replace_key_slot(&mut self, hash: u64, index: u32, to: Option<u32>) -> bool {
        if self.one == index {
            self.one = to.unwrap_or(NO_SLOT);
            return true;
        }
        let Some(t) = self.spill.as_mut().map(|s| &mut s.keys) else {
            return false;
        };
        match t.find_entry(hash, |&s| s == index) {
            Ok(e) => {
                match to {
                    Some(p) => *e.into_mut() = p,
                    None => {
                        e.remove();
                    }
                }
                true
            }
            Err(_) => false,
        }
    }

    /// The slot of the key with hash `hash` (`same_key(s)`: slot `s` holds that key).
    pub fn find_key(&self, hash: u64, same_key: impl Fn(u32) -> bool) -> Option<u32> {
        if self.one != NO_SLOT {
            return same_key(self.one).then_some(self.one);
        }
        self.table()?.find(hash, |&s| same_key(s)).copied()
    }

    /// Every slot the key index names.
    pub fn key_slots(&self) -> Vec<u32> {
        if self.one != NO_SLOT {
            return vec![self.one];
        }
        self.table()
            .map_or_else(Vec::new, |t| t.iter().copied().collect())
    }

    /// Queues a slot for the gate.
    pub fn push_waiter(&mut self, slot: u32) {
        self.spill
            .get_or_insert_with(Box::default)
            .waiters
            .push_back(slot);
    }

    /// The oldest slot waiting for the gate.
    pub fn pop_waiter(&mut self) -> Option<u32> {
        self.spill.as_mut()?.waiters.pop_front()
    }

    /// Generations of the owner that have not finished ending.
    pub fn live(&self) -> u32 {
        self.live & !RELEASED
    }

    /// A generation of the owner was published.
    pub fn add_live(&mut self) {
        debug_assert!(self.live() < RELEASED - 1);
        self.live += 1;
    }

    /// A generation of the owner finished ending; true when it was the last one of a
    /// released owner (which may now be forgotten).
    pub fn end_live(&mut self) -> bool {
        debug_assert!(self.live() > 0);
        self.live -= 1;
        self.live == RELEASED
    }

    /// The host released the owner: it is forgotten once its timers have ended.
    pub fn released(&self) -> bool {
        self.live & RELEASED != 0
    }

    pub fn set_released(&mut self, released: bool) {
        if released {
            self.live |= RELEASED;
        } else {
            self.live &= !RELEASED;
        }
    }

    /// Forgets the keys and waiters and frees the spill (the owner is forgotten).
    pub fn clear(&mut self) {
        self.one = NO_SLOT;
        self.spill = None;
        self.set_released(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Slot s holds key s / 10: slots 10 and 11 hold the same key.
    fn key(s: u32) -> u64 {
        u64::from(s / 10)
    }

    fn upsert(b: &mut OwnerBook, index: u32) -> Option<u32> {
        let h = key(index);
        b.upsert_key(
            h,
            index,
            |s| key(s) == h,
            |&s| key(s),
            &KeyTableSizes::default(),
        )
    }

    #[test]
    fn the_book_is_sixteen_bytes() {
        assert_eq!(std::mem::size_of::<OwnerBook>(), 16);
    }

    #[test]
    fn one_key_inline_then_a_table_from_the_second_key() {
        let mut b = OwnerBook::default();
        assert_eq!(upsert(&mut b, 10), None);
        assert!(b.spill.is_none(), "one key: no allocation");
        assert_eq!(upsert(&mut b, 11), Some(10), "same key: replaced");
        assert_eq!(b.key_slots(), vec![11]);
        assert_eq!(upsert(&mut b, 20), None);
        assert!(b.spill.is_some());
        assert_eq!(b.one, NO_SLOT, "every key is in the table");
        assert_eq!(b.find_key(1, |s| key(s) == 1), Some(11));
        assert_eq!(b.find_key(2, |s| key(s) == 2), Some(20));
        assert_eq!(b.find_key(3, |s| key(s) == 3), None);
        let mut all = b.key_slots();
        all.sort_unstable();
        assert_eq!(all, vec![11, 20]);
        assert_eq!(
            upsert(&mut b, 21),
            Some(20),
            "same key in the table: replaced"
        );
    }

    #[test]
    fn replace_key_slot_only_touches_the_named_slot() {
        let mut b = OwnerBook::default();
        upsert(&mut b, 10);
        assert!(
            !b.replace_key_slot(1, 12, None),
            "another generation of the key"
        );
        assert!(b.replace_key_slot(1, 10, Some(13)));
        assert_eq!(b.find_key(1, |s| key(s) == 1), Some(13));
        assert!(b.replace_key_slot(1, 13, None));
        assert_eq!(
            b.key_slots(),
            Vec::<u32>::new(),
            "one key removed: none held"
        );
        upsert(&mut b, 10);
        upsert(&mut b, 20);
        assert!(b.replace_key_slot(1, 10, None));
        assert!(b.replace_key_slot(2, 20, None));
        assert!(b.spill.is_some(), "the table is kept when it empties");
        assert_eq!(b.key_slots(), Vec::<u32>::new());
        // An emptied table: the next key goes inline again, then back to the table.
        upsert(&mut b, 30);
        assert_eq!(b.one, 30);
        upsert(&mut b, 40);
        let mut all = b.key_slots();
        all.sort_unstable();
        assert_eq!(all, vec![30, 40]);
        b.clear();
        assert!(b.spill.is_none());
        assert_eq!(b.key_slots(), Vec::<u32>::new());
    }

    #[test]
    fn waiters_are_first_in_first_out_and_spill_only_when_used() {
        let mut b = OwnerBook::default();
        assert_eq!(b.pop_waiter(), None);
        assert!(b.spill.is_none());
        upsert(&mut b, 10);
        b.push_waiter(10);
        b.push_waiter(11);
        assert_eq!(
            b.key_slots(),
            vec![10],
            "waiters leave the inline key alone"
        );
        assert_eq!(b.pop_waiter(), Some(10));
        assert_eq!(b.pop_waiter(), Some(11));
        assert_eq!(b.pop_waiter(), None);
    }

    #[test]
    fn live_count_and_released_flag_share_a_word() {
        let mut b = OwnerBook::default();
        b.add_live();
        b.add_live();
        assert!(!b.end_live(), "not released");
        b.set_released(true);
        assert!(b.released());
        assert_eq!(b.live(), 1);
        assert!(b.end_live(), "the last generation of a released owner");
        assert_eq!(b.live(), 0);
        b.clear();
        assert!(!b.released());
    }
}
