//! The lateness histogram: for every record handed to a host, how long after its nominal
//! due time it was handed over (`hand-over time − due time` of the tick it stands for).
//! Fixed log-linear buckets — four per power of two from 1 µs to about 69 s — so its size
//! never grows and a quantile is read off the bucket bounds.
//!
//! Striped like the counters (`crate::stats`): a thread adds to its own stripe; a
//! snapshot sums them.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::thread_index::{thread_index, EXCLUSIVE};

const SHARED_STRIPES: usize = 4;
const STRIPES: usize = EXCLUSIVE + SHARED_STRIPES;
/// Below 2^10 ns (1.024 µs): bucket 0.
const FIRST_POW: u32 = 10;
/// Four sub-buckets per power of two up to 2^36 ns (68.7 s); above it: the last bucket.
const LAST_POW: u32 = 36;
const SUB: usize = 4;
/// Number of buckets (the last one is unbounded).
pub const BUCKETS: usize = 1 + (LAST_POW - FIRST_POW) as usize * SUB + 1;

fn bucket_of(ns: u64) -> usize {
    if ns < 1 << FIRST_POW {
        return 0;
    }
    let p = 63 - ns.leading_zeros();
    if p >= LAST_POW {
        return BUCKETS - 1;
    }
    let sub = ((ns >> (p - 2)) & 3) as usize;
    1 + (p - FIRST_POW) as usize * SUB + sub
}

/// The upper bound (exclusive) of bucket `i` in nanoseconds; `u64::MAX` for the last.
fn upper_bound(i: usize) -> u64 {
    if i == 0 {
        return 1 << FIRST_POW;
    }
    if i == BUCKETS - 1 {
        return u64::MAX;
    }
    let p = FIRST_POW + ((i - 1) / SUB) as u32;
    let sub = ((i - 1) % SUB) as u64;
    (4 + sub + 1) << (p - 2)
}

struct Stripe {
    buckets: [AtomicU64; BUCKETS],
    sum: AtomicU64,
}

pub(crate) struct LatenessHistogram {
    stripes: Box<[CachePadded<Stripe>]>,
}

impl Default for LatenessHistogram {
    fn default() -> Self {
        Self {
            stripes: (0..STRIPES)
                .map(|_| {
                    CachePadded::new(Stripe {
                        buckets: std::array::from_fn(|_| AtomicU64::new(0)),
                        sum: AtomicU64::new(0),
                    })
                })
                .collect(),
        }
    }
}

impl LatenessHistogram {
    /// Records one lateness of `ns` nanoseconds.
    #[inline]
    pub fn record(&self, ns: u64) {
        let t = thread_index();
        let b = bucket_of(ns);
        if t < EXCLUSIVE {
            // This thread is the stripe's only writer.
            let s = &self.stripes[t];
            s.buckets[b].store(s.buckets[b].load(Relaxed) + 1, Relaxed);
            s.sum.store(s.sum.load(Relaxed).wrapping_add(ns), Relaxed);
        } else {
            let s = &self.stripes[EXCLUSIVE + t % SHARED_STRIPES];
            s.buckets[b].fetch_add(1, Relaxed);
            s.sum.fetch_add(ns, Relaxed);
        }
    }

    pub fn snapshot(&self) -> Lateness {
        let mut counts = [0u64; BUCKETS];
        let mut sum = 0u64;
        for s in self.stripes.iter() {
            for (c, b) in counts.iter_mut().zip(s.buckets.iter()) {
                *c += b.load(Relaxed);
            }
            sum = sum.wrapping_add(s.sum.load(Relaxed));
        }
        Lateness {
            buckets: counts
                .iter()
                .enumerate()
                .map(|(i, &count)| LatenessBucket {
                    upper_ns: upper_bound(i),
                    count,
                })
                .collect(),
            sum_ns: sum,
        }
    }
}

/// One bucket of the lateness histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatenessBucket {
    /// Records in this bucket were handed over less than this many nanoseconds after their
    /// due time (and at least the previous bucket's bound); `u64::MAX` for the last.
    pub upper_ns: u64,
    /// Records in this bucket (not cumulative).
    pub count: u64,
}

/// A snapshot of the lateness histogram: how long after their nominal due time records
/// were handed to the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lateness {
    /// Every bucket in order (fixed bounds: 1 µs, then four per power of two to ~69 s).
    pub buckets: Vec<LatenessBucket>,
    /// The sum of all recorded latenesses, in nanoseconds.
    pub sum_ns: u64,
}

impl Lateness {
    /// What was recorded between `earlier` (a previous snapshot of the same runtime) and
    /// this one.
    pub fn since(&self, earlier: &Lateness) -> Lateness {
        Lateness {
            buckets: self
                .buckets
                .iter()
                .zip(earlier.buckets.iter())
                .map(|(now, then)| LatenessBucket {
                    upper_ns: now.upper_ns,
                    count: now.count.saturating_sub(then.count),
                })
                .collect(),
            sum_ns: self.sum_ns.wrapping_sub(earlier.sum_ns),
        }
    }

    /// Records counted.
    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.count).sum()
    }

    /// The upper bound of the bucket holding quantile `q` (0..=1): "q of the records were
    /// handed over less than this late". None when nothing was recorded.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for b in &self.buckets {
            seen += b.count;
            if seen >= rank {
                return Some(Duration::from_nanos(b.upper_ns));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_log_linear_and_bound_their_values() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(1023), 0);
        assert_eq!(upper_bound(0), 1024);
        for ns in [
            1024u64,
            1279,
            1280,
            5_000,
            999_999,
            1_000_000,
            12_345_678_901,
        ] {
            let b = bucket_of(ns);
            assert!(ns < upper_bound(b), "{ns} < bound of {b}");
            assert!(ns >= upper_bound(b - 1), "{ns} >= bound of {}", b - 1);
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
        // Four buckets per power of two: a bucket is at most 25% wide.
        assert_eq!(upper_bound(1), 1280);
        assert_eq!(upper_bound(4), 2048);
    }

    #[test]
    fn quantiles_read_the_bucket_bounds() {
        let h = LatenessHistogram::default();
        for _ in 0..99 {
            h.record(500);
        }
        h.record(3_000_000);
        let s = h.snapshot();
        assert_eq!(s.count(), 100);
        assert_eq!(s.quantile(0.5), Some(Duration::from_nanos(1024)));
        assert_eq!(s.quantile(0.99), Some(Duration::from_nanos(1024)));
        let p100 = s.quantile(1.0).unwrap().as_nanos() as u64;
        assert!((3_000_000..3_800_000).contains(&p100), "{p100}");
        assert_eq!(s.sum_ns, 99 * 500 + 3_000_000);
    }
}
