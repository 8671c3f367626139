//! Helpers shared by the benchmark binaries: quick mode, criterion settings, and the
//! `BinaryHeap` baseline every benchmark compares against.
#![allow(dead_code)]

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use criterion::Criterion;

/// `SPOT_BENCH_QUICK=1`: smaller sizes and shorter measurements (a smoke run).
pub fn quick() -> bool {
    std::env::var_os("SPOT_BENCH_QUICK").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Live-timer counts the churn benchmark runs at.
pub fn churn_sizes() -> Vec<usize> {
    if quick() {
        vec![1_000, 100_000]
    } else {
        vec![1_000, 100_000, 1_000_000]
    }
}

/// Short measurements so that the whole suite stays within minutes on two cores.
pub fn criterion() -> Criterion {
    let c = Criterion::default();
    if quick() {
        c.sample_size(10)
            .warm_up_time(Duration::from_millis(200))
            .measurement_time(Duration::from_millis(800))
    } else {
        c.sample_size(30)
            .warm_up_time(Duration::from_millis(700))
            .measurement_time(Duration::from_secs(3))
    }
}

/// The baseline: a binary min-heap of (due, slot, generation) with lazy deletion. Cancel
/// bumps the slot's generation; stale entries are skipped when they surface and the heap
/// is rebuilt once they outnumber the live ones, so churn does not grow it without bound.
#[derive(Default)]
pub struct HeapTimers {
    heap: BinaryHeap<Reverse<(u64, u32, u32)>>,
    generation: Vec<u32>,
    free: Vec<u32>,
    stale: usize,
}

impl HeapTimers {
    pub fn with_capacity(n: usize) -> Self {
        Self {
            heap: BinaryHeap::with_capacity(n),
            generation: Vec::with_capacity(n),
            free: Vec::new(),
            stale: 0,
        }
    }

    pub fn insert(&mut self, due: u64) -> (u32, u32) {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.generation.push(0);
                (self.generation.len() - 1) as u32
            }
        };
        let generation = self.generation[slot as usize];
        self.heap.push(Reverse((due, slot, generation)));
        (slot, generation)
    }

    pub fn cancel(&mut self, (slot, generation): (u32, u32)) {
        let g = &mut self.generation[slot as usize];
        if *g != generation {
            return;
        }
        *g = g.wrapping_add(1);
        self.free.push(slot);
        self.stale += 1;
        if self.stale > 1024 && self.stale * 2 > self.heap.len() {
            let generation = &self.generation;
            self.heap
                .retain(|Reverse((_, s, g))| generation[*s as usize] == *g);
            self.stale = 0;
        }
    }

    /// Pops every live entry due at `now`, re-arming each one `period` later (a periodic
    /// timer); returns how many fired.
    pub fn fire_periodic(&mut self, now: u64, period: u64) -> usize {
        let mut fired = 0;
        while let Some(&Reverse((due, slot, generation))) = self.heap.peek() {
            if due > now {
                break;
            }
            self.heap.pop();
            if self.generation[slot as usize] != generation {
                self.stale = self.stale.saturating_sub(1);
                continue;
            }
            fired += 1;
            self.heap.push(Reverse((due + period, slot, generation)));
        }
        fired
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }
}
