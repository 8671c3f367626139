//! What an owner's lock guards: the slot of each of its keys' current generation, the
//! timers waiting for its gate, how many of its generations are still ending, and whether
//! the host released it.
//!
//! Most owners hold one or two timers at a time (an actor's tick and its request timeout, a
//! connection's idle timeout) and rarely queue at their gate, so the book is 16 bytes: up to
//! two keys inline, two counters, and — in the second key's place — a pointer to a spill
//! that exists only once an owner holds a third key or a timer waits for its gate. An owner
//! with no more than two timers holds no allocation and touches no line but its own entry,
//! and registering and cancelling its timers again and again allocates nothing. The spill
//! is kept when it empties (it is freed with the owner), so owners that churn many timers
//! do not re-grow it every round. Keys are hashed by key; the key itself lives in the slot,
//! so lookups take the slot table's word through closures.

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
    /// Keys when there are more than fit inline (all of them once this holds any: `one`
    /// and the second inline key are then empty).
    keys: HashTable<u32>,
    /// Slots waiting for the gate (or parked after a deferral), oldest first.
    waiters: VecDeque<u32>,
}

/// See the module documentation.
pub(crate) struct OwnerBook {
    /// Null; or the second inline key's slot, as `(slot << 1) | 1` (an address no pointer
    /// has: a `Spill` is aligned to 8); or the spill, a pointer from `Box::into_raw`.
    rest: *mut Spill,
    /// The slot of the owner's first key, while its key table holds none (`NO_SLOT`: none).
    one: u32,
    /// Generations of this owner that have not finished ending, and `RELEASED`.
    live: u32,
}

// SAFETY: `rest` is the book's own `Box<Spill>` (or no pointer at all); the book is only
// reached through its owner's lock.
unsafe impl Send for OwnerBook {}
// SAFETY: as above; `&OwnerBook` gives only shared access to the spill.
unsafe impl Sync for OwnerBook {}

impl Default for OwnerBook {
    fn default() -> Self {
        Self {
            rest: std::ptr::null_mut(),
            one: NO_SLOT,
            live: 0,
        }
    }
}

impl Drop for OwnerBook {
    fn drop(&mut self) {
        self.drop_spill();
    }
}

impl OwnerBook {
    /// The second inline key's slot.
    #[inline]
    fn two(&self) -> Option<u32> {
        (self.rest.addr() & 1 == 1).then(|| (self.rest.addr() >> 1) as u32)
    }

    #[inline]
    fn set_two(&mut self, slot: Option<u32>) {
        debug_assert!(self.spill().is_none());
        self.rest = match slot {
            Some(s) => std::ptr::without_provenance_mut(((s as usize) << 1) | 1),
            None => std::ptr::null_mut(),
        };
    }

    #[inline]
    fn spill(&self) -> Option<&Spill> {
        if self.rest.is_null() || self.rest.addr() & 1 == 1 {
            return None;
        }
        // SAFETY: an even non-null `rest` is the book's own `Box<Spill>`.
        Some(unsafe { &*self.rest })
    }

    #[inline]
    fn spill_mut(&mut self) -> Option<&mut Spill> {
        if self.rest.is_null() || self.rest.addr() & 1 == 1 {
            return None;
        }
        // SAFETY: as in `spill`, and `&mut self` is the only way to it.
        Some(unsafe { &mut *self.rest })
    }

    /// The spill, made when there is none (keys inline stay inline).
    fn spill_or_make(&mut self) -> &mut Spill {
        if self.spill().is_none() {
            debug_assert!(
                self.two().is_none(),
                "a second inline key moves to the table first"
            );
            self.rest = Box::into_raw(Box::<Spill>::default());
        }
        self.spill_mut().expect("made above")
    }

    /// Moves the inline keys into the table (made if needed, with room for `room` keys)
    /// and returns it: every key is then in the table.
    fn keys_to_table(&mut self, room: usize, hasher: &impl Fn(&u32) -> u64) -> &mut HashTable<u32> {
        let inline = [(self.one != NO_SLOT).then_some(self.one), self.two()];
        if self.two().is_some() {
            self.rest = std::ptr::null_mut();
        }
        self.one = NO_SLOT;
        let t = &mut self.spill_or_make().keys;
        if t.capacity() < room {
            t.reserve(room - t.len(), hasher);
        }
        for s in inline.into_iter().flatten() {
            t.insert_unique(hasher(&s), s, hasher);
        }
        t
    }

    fn drop_spill(&mut self) {
        if self.spill().is_some() {
            // SAFETY: an even non-null `rest` came from `Box::into_raw` and is dropped once.
            drop(unsafe { Box::from_raw(self.rest) });
        }
        self.rest = std::ptr::null_mut();
    }

    fn table(&self) -> Option<&HashTable<u32>> {
        self.spill().map(|s| &s.keys).filter(|t| !t.is_empty())
    }

    /// Maps the key of slot `index` (hash `hash`; `same_key(s)`: slot `s` holds the same
    /// key) to `index`. Returns the slot it named before, if any. A table that must grow
    /// grows to the room `sizes` says. A key that does not fit inline first asks
    /// `give_up(s)` of each inline key's slot whether it holds a kept end (then the caller
    /// took it out of its hold, and the key leaves the book and its live count): an owner
    /// whose keys come and go stays inline.
    #[inline]
    pub fn upsert_key(
        &mut self,
        hash: u64,
        index: u32,
        same_key: impl Fn(u32) -> bool,
        hasher: impl Fn(&u32) -> u64,
        sizes: &KeyTableSizes,
        mut give_up: impl FnMut(u32) -> bool,
    ) -> Option<u32> {
        if self.one != NO_SLOT {
            if same_key(self.one) {
                return Some(std::mem::replace(&mut self.one, index));
            }
            if let Some(two) = self.two() {
                if same_key(two) {
                    self.set_two(Some(index));
                    return Some(two);
                }
            } else if self.spill().is_none() {
                // A second key: inline too.
                self.set_two(Some(index));
                return None;
            }
            let mut made_room = false;
            for s in self.inline_slots().into_iter().flatten() {
                if give_up(s) {
                    self.replace_key_slot(hash, s, None);
                    self.end_live();
                    made_room = true;
                }
            }
            if made_room && self.one != NO_SLOT && self.spill().is_none() {
                self.set_two(Some(index));
                return None;
            }
            if self.one != NO_SLOT {
                // A third key, or a second beside a spill of gate waiters: every key goes
                // to the table.
                let room = sizes.grow_from(2);
                let t = self.keys_to_table(room, &hasher);
                t.insert_unique(hash, index, &hasher);
                return None;
            }
            // Both inline keys were given up: on as for an owner without keys.
        }
        match self.spill_mut().map(|s| &mut s.keys) {
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
            match to {
                Some(p) => self.one = p,
                // The second inline key, if any, becomes the first.
                None => match self.two() {
                    Some(two) => {
                        self.one = two;
                        self.set_two(None);
                    }
                    None => self.one = NO_SLOT,
                },
            }
            return true;
        }
        if self.two() == Some(index) {
            self.set_two(to);
            return true;
        }
        let Some(t) = self.spill_mut().map(|s| &mut s.keys) else {
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

    /// The slots of the inline keys.
    fn inline_slots(&self) -> [Option<u32>; 2] {
        [(self.one != NO_SLOT).then_some(self.one), self.two()]
    }

    /// Does an inline key name slot `index`?
    pub fn holds_inline(&self, index: u32) -> bool {
        self.one == index || self.two() == Some(index)
    }

    /// The slot of the key with hash `hash` (`same_key(s)`: slot `s` holds that key).
    pub fn find_key(&self, hash: u64, same_key: impl Fn(u32) -> bool) -> Option<u32> {
        if self.one != NO_SLOT {
            if same_key(self.one) {
                return Some(self.one);
            }
            return self.two().filter(|&two| same_key(two));
        }
        self.table()?.find(hash, |&s| same_key(s)).copied()
    }

    /// Every slot the key index names.
    pub fn key_slots(&self) -> Vec<u32> {
        if self.one != NO_SLOT {
            return std::iter::once(self.one).chain(self.two()).collect();
        }
        self.table()
            .map_or_else(Vec::new, |t| t.iter().copied().collect())
    }

    /// Queues a slot for the gate (`hasher`: a key's hash by its slot, for a second inline
    /// key, which moves into the table with the first to make room for the queue).
    pub fn push_waiter(&mut self, slot: u32, hasher: impl Fn(&u32) -> u64) {
        if self.two().is_some() {
            self.keys_to_table(2, &hasher);
        }
        self.spill_or_make().waiters.push_back(slot);
    }

    /// The oldest slot waiting for the gate.
    pub fn pop_waiter(&mut self) -> Option<u32> {
        self.spill_mut()?.waiters.pop_front()
    }

    /// Generations of the owner that have not finished ending, and ended ones whose slot
    /// the key table still holds (kept ends, see `runtime::end`).
    pub fn live(&self) -> u32 {
        self.live & !RELEASED
    }

    /// A generation of the owner was published.
    pub fn add_live(&mut self) {
        debug_assert!(self.live() < RELEASED - 1);
        self.live += 1;
    }

    /// A generation of the owner finished ending (or the table gave up a kept end's slot);
    /// true when it was the last one of a released owner (which may now be forgotten).
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
        self.drop_spill();
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
            |_| false,
        )
    }

    #[test]
    fn the_book_is_sixteen_bytes() {
        assert_eq!(std::mem::size_of::<OwnerBook>(), 16);
    }

    fn sorted(mut v: Vec<u32>) -> Vec<u32> {
        v.sort_unstable();
        v
    }

    #[test]
    fn two_keys_inline_then_a_table_from_the_third_key() {
        let mut b = OwnerBook::default();
        assert_eq!(upsert(&mut b, 10), None);
        assert_eq!(upsert(&mut b, 11), Some(10), "same key: replaced");
        assert_eq!(upsert(&mut b, 20), None);
        assert!(b.spill().is_none(), "two keys: no allocation");
        assert_eq!((b.one, b.two()), (11, Some(20)));
        assert_eq!(
            upsert(&mut b, 21),
            Some(20),
            "the second inline key: replaced"
        );
        assert_eq!(b.find_key(1, |s| key(s) == 1), Some(11));
        assert_eq!(b.find_key(2, |s| key(s) == 2), Some(21));
        assert_eq!(b.find_key(3, |s| key(s) == 3), None);
        assert_eq!(sorted(b.key_slots()), vec![11, 21]);
        assert_eq!(upsert(&mut b, 30), None);
        assert!(b.spill().is_some());
        assert_eq!(
            (b.one, b.two()),
            (NO_SLOT, None),
            "every key is in the table"
        );
        assert_eq!(sorted(b.key_slots()), vec![11, 21, 30]);
        for (k, s) in [(1, 11), (2, 21), (3, 30)] {
            assert_eq!(b.find_key(k, |x| key(x) == k), Some(s));
        }
        assert_eq!(
            upsert(&mut b, 31),
            Some(30),
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
        // Two inline: removing the first makes the second the first.
        upsert(&mut b, 10);
        upsert(&mut b, 20);
        assert!(b.replace_key_slot(1, 10, None));
        assert_eq!((b.one, b.two()), (20, None));
        upsert(&mut b, 30);
        assert!(
            b.replace_key_slot(3, 30, Some(31)),
            "the second inline key moves"
        );
        assert_eq!(b.find_key(3, |s| key(s) == 3), Some(31));
        assert!(b.replace_key_slot(3, 31, None));
        assert_eq!(b.key_slots(), vec![20]);
        // Through the table and back: an emptied table is kept; the next key goes inline.
        upsert(&mut b, 30);
        upsert(&mut b, 40);
        assert!(b.spill().is_some());
        for (k, s) in [(2, 20), (3, 30), (4, 40)] {
            assert!(b.replace_key_slot(k, s, None));
        }
        assert!(b.spill().is_some(), "the table is kept when it empties");
        assert_eq!(b.key_slots(), Vec::<u32>::new());
        upsert(&mut b, 50);
        assert_eq!(b.one, 50);
        upsert(&mut b, 60);
        assert_eq!(sorted(b.key_slots()), vec![50, 60]);
        assert!(b.find_key(6, |s| key(s) == 6).is_some());
        b.clear();
        assert!(b.spill().is_none());
        assert_eq!(b.key_slots(), Vec::<u32>::new());
    }

    #[test]
    fn waiters_are_first_in_first_out_and_spill_only_when_used() {
        let mut b = OwnerBook::default();
        assert_eq!(b.pop_waiter(), None);
        assert!(b.spill().is_none());
        upsert(&mut b, 10);
        b.push_waiter(10, |&s| key(s));
        b.push_waiter(11, |&s| key(s));
        assert_eq!(
            b.key_slots(),
            vec![10],
            "waiters leave a single inline key alone"
        );
        assert_eq!(b.pop_waiter(), Some(10));
        assert_eq!(b.pop_waiter(), Some(11));
        assert_eq!(b.pop_waiter(), None);
        // Beside a spill of waiters, a second key goes to the table with the first.
        upsert(&mut b, 20);
        assert_eq!(b.one, NO_SLOT);
        assert_eq!(sorted(b.key_slots()), vec![10, 20]);
        // Two inline keys move to the table when a waiter needs the spill.
        let mut c = OwnerBook::default();
        upsert(&mut c, 10);
        upsert(&mut c, 20);
        c.push_waiter(20, |&s| key(s));
        assert_eq!((c.one, c.two()), (NO_SLOT, None));
        assert_eq!(c.find_key(1, |s| key(s) == 1), Some(10));
        assert_eq!(c.find_key(2, |s| key(s) == 2), Some(20));
        assert_eq!(c.pop_waiter(), Some(20));
    }

    /// A model check: any sequence of upserts, removals and waiters keeps the book's keys
    /// equal to a plain map's.
    #[test]
    fn the_book_agrees_with_a_map() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Under Miri (which checks the spill pointer's tagging) fewer sequences: each costs
        // seconds there.
        for _ in 0..if cfg!(miri) { 10 } else { 200 } {
            let mut b = OwnerBook::default();
            let mut model = std::collections::HashMap::<u64, u32>::new();
            let mut gen = [0u32; 6];
            for _ in 0..60 {
                let k = next() % 6;
                match next() % 4 {
                    0 | 1 => {
                        gen[k as usize] += 1;
                        let s = (k as u32) * 10 + gen[k as usize] % 10;
                        let before = upsert(&mut b, s);
                        assert_eq!(before, model.insert(k, s));
                    }
                    2 => {
                        if let Some(s) = model.remove(&k) {
                            assert!(b.replace_key_slot(k, s, None));
                        }
                    }
                    _ => b.push_waiter(k as u32, |&s| key(s)),
                }
                assert_eq!(
                    sorted(b.key_slots()),
                    sorted(model.values().copied().collect())
                );
                for k in 0..6u64 {
                    assert_eq!(b.find_key(k, |s| key(s) == k), model.get(&k).copied());
                }
            }
        }
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

    #[test]
    fn inline_keys_held_by_kept_ends_make_room_for_a_new_key() {
        let mut b = OwnerBook::default();
        for s in [10, 20] {
            upsert(&mut b, s);
            b.add_live();
        }
        // A third key: slot 10's generation ended kept, 20's is live.
        let mut asked = Vec::new();
        let old = b.upsert_key(
            key(30),
            30,
            |s| key(s) == key(30),
            |&s| key(s),
            &KeyTableSizes::default(),
            |s| {
                asked.push(s);
                s == 10
            },
        );
        b.add_live();
        assert_eq!(old, None);
        assert_eq!(asked, vec![10, 20]);
        assert!(b.spill().is_none(), "still inline");
        assert_eq!(b.key_slots(), vec![20, 30]);
        assert_eq!(b.live(), 2, "the kept end left the count");
        // Neither held by a kept end: the keys move to a table.
        upsert(&mut b, 40);
        assert!(b.spill().is_some());
        let mut slots = b.key_slots();
        slots.sort();
        assert_eq!(slots, vec![20, 30, 40]);
    }
}
