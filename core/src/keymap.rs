//! The map from a timer's key to its slot, one per owner.
//!
//! Every registration looks a key up and inserts it, and every slot release removes it, so
//! the hash is on the register/cancel path twice each. std's SipHash costs about as much as
//! the rest of a lookup; keys here are plain `u64`s, for which one folded 64x64-bit
//! multiply with a per-process random seed mixes every input bit into both the bucket
//! index (low bits) and hashbrown's tag (top bits), and keeps chosen keys from colliding on
//! purpose (the seed is unknown to whoever picks them).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

/// key -> slot.
pub(crate) type KeyMap = HashMap<u64, u32, KeyHashing>;

pub(crate) fn new_key_map() -> KeyMap {
    HashMap::with_hasher(KeyHashing {
        seed: process_seed(),
    })
}

fn process_seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    // std's RandomState draws its keys from the OS; hashing a constant with it gives a
    // random 64-bit seed without another dependency.
    *SEED.get_or_init(|| std::collections::hash_map::RandomState::new().hash_one(0x5107_u64) | 1)
}

#[derive(Clone, Copy)]
pub(crate) struct KeyHashing {
    seed: u64,
}

impl BuildHasher for KeyHashing {
    type Hasher = KeyHasher;
    fn build_hasher(&self) -> KeyHasher {
        KeyHasher {
            seed: self.seed,
            hash: 0,
        }
    }
}

pub(crate) struct KeyHasher {
    seed: u64,
    hash: u64,
}

/// Odd constant from the golden ratio (2^64 / phi).
const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

fn fold_multiply(a: u64, b: u64) -> u64 {
    let full = u128::from(a) * u128::from(b);
    (full as u64) ^ ((full >> 64) as u64)
}

impl Hasher for KeyHasher {
    fn write_u64(&mut self, key: u64) {
        self.hash = fold_multiply(key ^ self.seed, MULTIPLIER ^ self.hash);
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed here; this keeps the Hasher contract for anything else.
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_and_strided_keys_spread_over_buckets_and_tags() {
        let build = KeyHashing {
            seed: 0x1234_5678_9abc_def1,
        };
        for stride in [1u64, 8, 4096, 1 << 32] {
            let mut low = std::collections::HashSet::new();
            let mut top = std::collections::HashSet::new();
            for k in 0..4096u64 {
                let h = build.hash_one(k * stride);
                low.insert(h & 4095);
                top.insert(h >> 57);
            }
            // 4096 keys into 4096 buckets: a good hash fills about 63% of them.
            assert!(low.len() > 2300, "stride {stride}: {} buckets", low.len());
            assert_eq!(top.len(), 128, "stride {stride}: all 7-bit tags used");
        }
    }

    #[test]
    fn map_round_trips() {
        let mut m = new_key_map();
        for k in 0..10_000u64 {
            m.insert(k.wrapping_mul(0xdead_beef), k as u32);
        }
        for k in 0..10_000u64 {
            assert_eq!(m.get(&k.wrapping_mul(0xdead_beef)), Some(&(k as u32)));
        }
    }
}
