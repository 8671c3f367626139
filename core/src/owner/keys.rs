//! An owner's key index: the slot of each key's current generation, hashed by key (the key
//! itself lives in the slot, so lookups take the slot table's word through closures).
//!
//! Most owners hold one timer at a time (an actor's tick, a request timeout), so one key is
//! kept inline: an owner with no timer or one holds no allocation, and registering and
//! cancelling its timer again and again allocates nothing. A hash table exists from an
//! owner's second key on and is kept when it empties (it is freed with the owner), so
//! owners that churn many timers do not re-grow it every round.

use hashbrown::HashTable;

#[derive(Default)]
pub(crate) enum KeyIndex {
    /// No key and no table.
    #[default]
    Empty,
    /// One key, whose current generation is in this slot.
    One(u32),
    /// Any number of keys.
    Many(HashTable<u32>),
}

impl KeyIndex {
    /// Maps the key of slot `index` (hash `hash`; `same_key(s)`: slot `s` holds the same
    /// key) to `index`. Returns the slot it named before, if any.
    pub fn upsert(
        &mut self,
        hash: u64,
        index: u32,
        same_key: impl Fn(u32) -> bool,
        hasher: impl Fn(&u32) -> u64,
    ) -> Option<u32> {
        match self {
            KeyIndex::Empty => {
                *self = KeyIndex::One(index);
                None
            }
            KeyIndex::One(s) if same_key(*s) => Some(std::mem::replace(s, index)),
            KeyIndex::One(s) => {
                let first = *s;
                let mut t = HashTable::with_capacity(2);
                t.insert_unique(hasher(&first), first, &hasher);
                t.insert_unique(hash, index, &hasher);
                *self = KeyIndex::Many(t);
                None
            }
            KeyIndex::Many(t) => match t.entry(hash, |&s| same_key(s), hasher) {
                hashbrown::hash_table::Entry::Occupied(mut e) => {
                    Some(std::mem::replace(e.get_mut(), index))
                }
                hashbrown::hash_table::Entry::Vacant(e) => {
                    e.insert(index);
                    None
                }
            },
        }
    }

    /// If the key (hash `hash`) names slot `index`: makes it name `to` instead, or removes
    /// it (`to` None). False when the key names another slot or none.
    pub fn replace_slot(&mut self, hash: u64, index: u32, to: Option<u32>) -> bool {
        match self {
            KeyIndex::Empty => false,
            KeyIndex::One(s) if *s == index => {
                match to {
                    Some(p) => *s = p,
                    None => *self = KeyIndex::Empty,
                }
                true
            }
            KeyIndex::One(_) => false,
            KeyIndex::Many(t) => match t.find_entry(hash, |&s| s == index) {
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
            },
        }
    }

    /// The slot of the key with hash `hash` (`same_key(s)`: slot `s` holds that key).
    pub fn find(&self, hash: u64, same_key: impl Fn(u32) -> bool) -> Option<u32> {
        match self {
            KeyIndex::Empty => None,
            KeyIndex::One(s) => same_key(*s).then_some(*s),
            KeyIndex::Many(t) => t.find(hash, |&s| same_key(s)).copied(),
        }
    }

    /// Every slot the index names.
    pub fn slots(&self) -> Vec<u32> {
        match self {
            KeyIndex::Empty => Vec::new(),
            KeyIndex::One(s) => vec![*s],
            KeyIndex::Many(t) => t.iter().copied().collect(),
        }
    }

    /// Forgets every key and frees the table.
    pub fn clear(&mut self) {
        *self = KeyIndex::Empty;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Slot s holds key s / 10: slots 10 and 11 hold the same key.
    fn key(s: u32) -> u64 {
        u64::from(s / 10)
    }

    fn upsert(k: &mut KeyIndex, index: u32) -> Option<u32> {
        let h = key(index);
        k.upsert(h, index, |s| key(s) == h, |&s| key(s))
    }

    #[test]
    fn one_key_inline_then_a_table_from_the_second_key() {
        let mut k = KeyIndex::default();
        assert_eq!(upsert(&mut k, 10), None);
        assert!(matches!(k, KeyIndex::One(10)));
        assert_eq!(upsert(&mut k, 11), Some(10), "same key: replaced");
        assert!(matches!(k, KeyIndex::One(11)));
        assert_eq!(upsert(&mut k, 20), None);
        assert!(matches!(k, KeyIndex::Many(_)));
        assert_eq!(k.find(1, |s| key(s) == 1), Some(11));
        assert_eq!(k.find(2, |s| key(s) == 2), Some(20));
        assert_eq!(k.find(3, |s| key(s) == 3), None);
        let mut all = k.slots();
        all.sort_unstable();
        assert_eq!(all, vec![11, 20]);
    }

    #[test]
    fn replace_slot_only_touches_the_named_slot() {
        let mut k = KeyIndex::default();
        upsert(&mut k, 10);
        assert!(
            !k.replace_slot(1, 12, None),
            "another generation of the key"
        );
        assert!(k.replace_slot(1, 10, Some(13)));
        assert_eq!(k.find(1, |s| key(s) == 1), Some(13));
        assert!(k.replace_slot(1, 13, None));
        assert!(
            matches!(k, KeyIndex::Empty),
            "one key removed: nothing held"
        );
        upsert(&mut k, 10);
        upsert(&mut k, 20);
        assert!(k.replace_slot(1, 10, None));
        assert!(k.replace_slot(2, 20, None));
        assert!(
            matches!(k, KeyIndex::Many(_)),
            "the table is kept when it empties"
        );
        assert_eq!(k.slots(), Vec::<u32>::new());
        k.clear();
        assert!(matches!(k, KeyIndex::Empty));
    }
}
