//! Per-generation state most timers never need — a release hook, waiters for the end,
//! cancel notices, the failure count, a cleanup failure's message — kept out of the slot
//! in a map sharded by slot. A slot's `HAS_COLD` flag says whether to look here at all, so
//! a timer without any of it never touches this table.

use std::collections::HashMap;
use std::sync::Arc;

use crate::end::EndResult;
use crate::hash::U64Hashing;
use crate::sync::{Mutex, MutexGuard};

/// Cleans up the host's user data when a generation ends. It may fail; the failure becomes
/// the generation's terminal result (contract T2).
pub type ReleaseHook = Box<dyn FnOnce() -> std::result::Result<(), String> + Send>;

/// Cleans up a payload when its generation ends: configured once per runtime
/// (`RuntimeConfig::release`), so a host whose payloads need cleanup (a C host's user data)
/// pays nothing per registration. A failure becomes the generation's terminal result.
pub type PayloadRelease<P> = Box<dyn Fn(&P) -> std::result::Result<(), String> + Send + Sync>;

/// Called once with a generation's terminal result.
pub(crate) type Subscriber = Box<dyn FnOnce(&EndResult) + Send>;

/// The cold state of one generation.
#[derive(Default)]
pub(crate) struct Cold {
    pub generation: u64,
    pub hook: Option<ReleaseHook>,
    pub failed: u64,
    pub subscribers: Vec<Subscriber>,
    pub notices: Vec<u64>,
    pub message: Option<Arc<str>>,
}

const SHARDS: usize = 64;

pub(crate) type ColdShard = HashMap<u32, Cold, U64Hashing>;

pub(crate) struct ColdTable {
    shards: Box<[Mutex<ColdShard>]>,
}

impl Default for ColdTable {
    fn default() -> Self {
        Self {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(HashMap::with_hasher(U64Hashing)))
                .collect(),
        }
    }
}

impl ColdTable {
    /// The shard holding `slot`'s entry, locked.
    pub fn lock(&self, slot: u32) -> MutexGuard<'_, ColdShard> {
        self.shards[slot as usize % SHARDS].lock()
    }

    /// `slot`'s entry for `generation`, created (replacing a previous generation's) if
    /// needed.
    pub fn entry(shard: &mut ColdShard, slot: u32, generation: u64) -> &mut Cold {
        let e = shard.entry(slot).or_default();
        if e.generation != generation {
            *e = Cold {
                generation,
                ..Cold::default()
            };
        }
        e
    }

    /// `slot`'s entry if it belongs to `generation`.
    pub fn find(shard: &mut ColdShard, slot: u32, generation: u64) -> Option<&mut Cold> {
        shard.get_mut(&slot).filter(|e| e.generation == generation)
    }
}
