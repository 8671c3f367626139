//! Hashing of the runtime's u64 keys (timer keys, owner ids).
//!
//! Keys are plain `u64`s, for which one folded 64x64-bit multiply with a per-process
//! random seed mixes every input bit into both the bucket index (low bits) and the
//! SwissTable tag (top bits) — at a fraction of SipHash's cost, which used to match the
//! rest of a lookup — and keeps keys chosen by a host from colliding on purpose (the seed
//! is unknown to whoever picks them).

use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

/// Odd constant from the golden ratio (2^64 / phi).
const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

#[inline]
fn process_seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    // std's RandomState draws its keys from the OS; hashing a constant with it gives a
    // random 64-bit seed without another dependency.
    *SEED.get_or_init(|| std::collections::hash_map::RandomState::new().hash_one(0x5107_u64) | 1)
}

fn fold_multiply(a: u64, b: u64) -> u64 {
    let full = u128::from(a) * u128::from(b);
    (full as u64) ^ ((full >> 64) as u64)
}

/// The hash of one u64 key.
#[inline]
pub(crate) fn hash_u64(key: u64) -> u64 {
    fold_multiply(key ^ process_seed(), MULTIPLIER)
}

/// A `BuildHasher` for maps keyed by one u64 (or a newtype of one, such as an id a host
/// chooses): one folded multiply with a per-process random seed, in place of SipHash.
/// Layers over the runtime key their own tables of ids with it.
#[derive(Debug, Clone, Copy, Default)]
pub struct U64Hashing;

impl BuildHasher for U64Hashing {
    type Hasher = U64Hasher;
    fn build_hasher(&self) -> U64Hasher {
        U64Hasher(0)
    }
}

/// The hasher of [`U64Hashing`].
#[derive(Debug)]
pub struct U64Hasher(u64);

impl Hasher for U64Hasher {
    fn write_u64(&mut self, key: u64) {
        self.0 = hash_u64(key ^ self.0);
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
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "16,384 hashes: minutes under Miri, and no unsafe code")]
    fn sequential_and_strided_keys_spread_over_buckets_and_tags() {
        for stride in [1u64, 8, 4096, 1 << 32] {
            let mut low = std::collections::HashSet::new();
            let mut top = std::collections::HashSet::new();
            for k in 0..4096u64 {
                let h = hash_u64(k * stride);
                low.insert(h & 4095);
                top.insert(h >> 57);
            }
            // 4096 keys into 4096 buckets: a good hash fills about 63% of them.
            assert!(low.len() > 2300, "stride {stride}: {} buckets", low.len());
            assert_eq!(top.len(), 128, "stride {stride}: all 7-bit tags used");
        }
    }
}
