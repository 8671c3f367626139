//! The records a node handed to its C host and that are not completed yet.
//!
//! The host names a record by a token this table makes: the record's place in the table
//! (low 32 bits) and how many records that place has held (high 32 bits, never 0). Finding
//! a record is an index, not a hash; a token of a completed record does not name a later
//! one (its place is used again under a new count, which repeats only after 2^32 uses). The records stay here until
//! completed: they own the payloads the C records point to, and a payload does not move
//! when its record does.

use spot_lifecycle::SpotRecord;

struct Place {
    /// Records this place has held (the current one's token carries this number).
    uses: u32,
    /// Named by an entry of the completion call being checked (a second entry naming it
    /// is a duplicate).
    marked: bool,
    record: Option<SpotRecord>,
}

#[derive(Default)]
pub(crate) struct InFlight {
    places: Vec<Place>,
    free: Vec<u32>,
}

fn split(token: u64) -> (usize, u32) {
    ((token & 0xffff_ffff) as usize, (token >> 32) as u32)
}

impl InFlight {
    /// Keeps `record`; returns its token.
    pub fn insert(&mut self, record: SpotRecord) -> u64 {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.places.push(Place {
                    uses: 0,
                    marked: false,
                    record: None,
                });
                (self.places.len() - 1) as u32
            }
        };
        let place = &mut self.places[index as usize];
        place.uses = place.uses.wrapping_add(1).max(1);
        place.record = Some(record);
        (u64::from(place.uses) << 32) | u64::from(index)
    }

    fn place(&self, token: u64) -> Option<&Place> {
        let (index, uses) = split(token);
        self.places
            .get(index)
            .filter(|p| p.uses == uses && p.record.is_some())
    }

    /// The record `token` names, if it awaits completion.
    pub fn get(&self, token: u64) -> Option<&SpotRecord> {
        self.place(token).and_then(|p| p.record.as_ref())
    }

    /// Marks the record `token` names; false if it names none, or one already marked.
    pub fn mark(&mut self, token: u64) -> bool {
        let (index, _) = split(token);
        if self.place(token).is_none_or(|p| p.marked) {
            return false;
        }
        self.places[index].marked = true;
        true
    }

    /// Clears the mark of the record `token` names.
    pub fn unmark(&mut self, token: u64) {
        let (index, _) = split(token);
        if self.place(token).is_some() {
            self.places[index].marked = false;
        }
    }

    /// Takes the record `token` names out (its place is free for another).
    pub fn remove(&mut self, token: u64) -> Option<SpotRecord> {
        self.place(token)?;
        let (index, _) = split(token);
        let place = &mut self.places[index];
        place.marked = false;
        self.free.push(index as u32);
        place.record.take()
    }
}
