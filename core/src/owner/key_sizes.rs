//! How large a runtime's owners' key tables grow, learned from the tables that grew.
//!
//! A hash table that doubles its way to N keys rehashes about N keys on the way and
//! allocates once per doubling. Owners of one runtime tend to look alike (an actor
//! framework's actors hold similar sets of timers), so once one owner's table has grown
//! to some size, the next table that must grow jumps towards that size instead of
//! doubling through every step. A jump is at most `MAX_STEP` times the table's own size,
//! so an owner with few keys never gets a table far beyond what it holds, whatever the
//! largest owner of the runtime did.

use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::Relaxed;

/// A growing table takes at most this many times the keys it holds.
const MAX_STEP: usize = 8;

#[derive(Default)]
pub(crate) struct KeyTableSizes {
    /// The largest room any table of the runtime was grown to (keys).
    largest: AtomicU32,
}

impl KeyTableSizes {
    /// The room (keys) a table holding `len` keys, with no room for one more, grows to:
    /// twice `len` at least, the largest room seen at most (and at most `MAX_STEP` times
    /// `len`). Records the result.
    pub fn grow_from(&self, len: usize) -> usize {
        let largest = self.largest.load(Relaxed) as usize;
        let room = largest.min(MAX_STEP * len.max(1)).max(2 * len).max(2);
        if room > largest {
            // Racing growths may each store their own: any of them is a fair record.
            self.largest
                .store(room.min(u32::MAX as usize) as u32, Relaxed);
        }
        room
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_table_doubles_and_later_ones_jump_to_what_it_reached() {
        let s = KeyTableSizes::default();
        // The first owner: no history, plain doubling.
        assert_eq!(s.grow_from(1), 2);
        assert_eq!(s.grow_from(3), 6);
        assert_eq!(s.grow_from(7), 14);
        assert_eq!(s.grow_from(56), 112);
        // The next owner's table jumps, eight times its size at most per step.
        assert_eq!(s.grow_from(1), 8);
        assert_eq!(s.grow_from(14), 112);
        // A table beyond the largest seen doubles again, and raises the record.
        assert_eq!(s.grow_from(112), 224);
        assert_eq!(s.grow_from(2), 16);
        assert_eq!(s.grow_from(28), 224);
    }

    #[test]
    fn an_empty_table_gets_room_for_two() {
        assert_eq!(KeyTableSizes::default().grow_from(0), 2);
    }
}
