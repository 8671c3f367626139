//! Random sequences of C ABI calls: create (random config bytes), register (random spec
//! bytes, release hooks that fail), cancel, cancel_async, exchange with random completions,
//! complete, record_begin, renew, revoke, release, gates, advance, stats, free; with stale, foreign,
//! freed and made-up handles.
//!
//! Checked on every call: no `SPOT_E_PANIC`, only known status codes. Checked on every
//! record: at most one TICK record per generation held by the host (T3), and for every
//! started callback `delivery_index` = previous + 1, `scheduled_index` strictly increasing
//! and `>= delivery_index`, `skipped_ticks` per T4 (no record delivered twice). At the end
//! every runtime is freed and every successfully registered generation's release hook ran
//! exactly once (none for failed registrations).

use std::collections::HashMap;
use std::ffi::c_void;
use std::os::raw::c_char;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use ::spot_timer::*;

use crate::bytes::Bytes;

const MAX_OPS: usize = 400;
const BUF_WORDS: usize = 520; // 4160 bytes: room for struct_size up to 4096 and beyond

static NEXT_USER_DATA: AtomicUsize = AtomicUsize::new(2);
/// user_data -> times its release hook ran.
static RELEASED: Mutex<Option<HashMap<usize, u32>>> = Mutex::new(None);

unsafe extern "C" fn release_hook(user_data: *mut c_void, msg: *mut c_char, len: usize) -> i32 {
    let ud = user_data as usize;
    let mut g = RELEASED.lock().unwrap_or_else(|e| e.into_inner());
    *g.get_or_insert_with(HashMap::new).entry(ud).or_insert(0) += 1;
    if ud & 4 != 0 {
        let text = b"fuzz: release failed\0";
        if !msg.is_null() && len >= text.len() {
            std::ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), msg, text.len());
        }
        1
    } else {
        0
    }
}

unsafe extern "C" fn batch_callback(
    _env: *mut c_void,
    records: *const spot_record,
    n: usize,
    completions: *mut spot_completion,
    n_completions: *mut usize,
) {
    let recs = std::slice::from_raw_parts(records, n);
    let mut k = 0;
    for r in recs {
        if r.kind == SPOT_RECORD_TICK {
            *completions.add(k) = spot_completion {
                token: r.token,
                outcome: SPOT_OUTCOME_OK,
                reserved: 0,
            };
            k += 1;
        }
    }
    *n_completions = k;
}

fn check(st: spot_status, what: &str) -> spot_status {
    assert_ne!(st, SPOT_E_PANIC, "{what}: a panic reached the boundary");
    assert!((0..=19).contains(&st), "{what}: unknown status {st}");
    st
}

#[derive(Default, Clone, Copy)]
struct Seen {
    delivered: u64,
    scheduled: u64,
}

struct Model {
    runtimes: Vec<u64>,
    live_runtimes: Vec<u64>,
    owners: Vec<(u64, u64, u64)>, // (rt, owner id, epoch)
    timers: Vec<(u64, spot_timer)>,
    held: Vec<(u64, spot_record)>,
    seen: HashMap<u64, Seen>, // by generation (process-unique)
    registered: Vec<usize>,   // user_data of successful registrations
    failed_registrations: Vec<usize>,
    buf: Box<[u64; BUF_WORDS]>,
}

impl Model {
    fn pick_rt(&self, b: &mut Bytes) -> u64 {
        match b.u8() % 10 {
            0 => b.u64(),
            1 => 0,
            _ if !self.runtimes.is_empty() => {
                self.runtimes[b.below(self.runtimes.len() as u64) as usize]
            }
            _ => b.u64(),
        }
    }
    fn pick_owner(&self, b: &mut Bytes) -> (u64, u64, u64) {
        if !self.owners.is_empty() && !b.one_in(8) {
            let (rt, id, ep) = self.owners[b.below(self.owners.len() as u64) as usize];
            // sometimes foreign: same owner on another runtime, or a wrong epoch
            match b.u8() % 10 {
                0 => (self.pick_rt(b), id, ep),
                1 => (rt, id, ep.wrapping_add(1)),
                _ => (rt, id, ep),
            }
        } else {
            (
                self.pick_rt(b),
                b.small_or_any_u64(4),
                b.small_or_any_u64(3),
            )
        }
    }
    fn pick_timer(&self, b: &mut Bytes) -> (u64, spot_timer) {
        if !self.timers.is_empty() && !b.one_in(8) {
            let (rt, t) = self.timers[b.below(self.timers.len() as u64) as usize];
            match b.u8() % 10 {
                0 => (self.pick_rt(b), t), // foreign runtime
                1 => (
                    rt,
                    spot_timer {
                        generation: t.generation ^ 1,
                        ..t
                    },
                ),
                2 => (rt, spot_timer { reserved: 1, ..t }),
                _ => (rt, t),
            }
        } else {
            (
                self.pick_rt(b),
                spot_timer {
                    generation: b.small_or_any_u64(64),
                    slot: b.small_or_any_u32(64),
                    reserved: if b.one_in(8) { b.u32() } else { 0 },
                },
            )
        }
    }
    fn timeout(b: &mut Bytes) -> i64 {
        // Never -1: the fuzzer itself holds records, a forever wait could wait for itself.
        match b.u8() % 4 {
            0 => 1_000, // 1 µs
            _ => 0,
        }
    }

    /// Fills the buffer with random bytes and returns a struct_size to use.
    fn fill_struct(&mut self, b: &mut Bytes, real_size: u32) -> u32 {
        for w in self.buf.iter_mut() {
            *w = 0;
        }
        match b.u8() % 16 {
            0 => b.u32(),                                 // anything
            1 => b.below(real_size as u64) as u32,        // too small
            2 => real_size + 8 * (1 + b.below(8) as u32), // newer, zero tail
            3 => {
                // newer, non-zero tail
                let extra = 8 * (1 + b.below(8) as usize);
                let i = (real_size as usize + b.below(extra as u64) as usize) / 8;
                self.buf[i.min(BUF_WORDS - 1)] = b.u64() | 1;
                (real_size as usize + extra) as u32
            }
            4 => 4096 + b.below(64) as u32,
            _ => real_size,
        }
    }

    fn note_tick(&mut self, rt: u64, r: &spot_record) {
        assert_eq!(r.reserved, 0);
        if r.kind != SPOT_RECORD_TICK {
            assert_eq!(r.kind, SPOT_RECORD_CANCEL_DONE, "unknown record kind");
            return;
        }
        let twice = self
            .held
            .iter()
            .any(|(hrt, h)| *hrt == rt && h.timer.generation == r.timer.generation);
        assert!(
            !twice,
            "T3: a second TICK record of generation {} while the host holds one",
            r.timer.generation
        );
        self.held.push((rt, *r));
    }

    fn started(&mut self, r: &spot_record) {
        let s = self.seen.entry(r.timer.generation).or_default();
        let expected_skipped = r.scheduled_index.saturating_sub(s.scheduled + 1);
        assert_eq!(
            r.delivery_index,
            s.delivered + 1,
            "T4 delivery_index: {r:?}"
        );
        assert!(r.scheduled_index > s.scheduled, "T4 scheduled_index: {r:?}");
        assert!(r.scheduled_index >= r.delivery_index, "T4: {r:?}");
        assert_eq!(r.skipped_ticks, expected_skipped, "T4 skipped_ticks: {r:?}");
        s.delivered = r.delivery_index;
        s.scheduled = r.scheduled_index;
    }

    /// Completions for some held records of `rt` (begin first), plus optional garbage.
    /// Returns (completions, records started by them, indexes in `held` to drop).
    fn completions(
        &mut self,
        b: &mut Bytes,
        rt: u64,
    ) -> (Vec<spot_completion>, Vec<spot_record>, Vec<usize>, bool) {
        let mut out = Vec::new();
        let mut started = Vec::new();
        let mut taken = Vec::new();
        let mut garbage = false;
        for (i, (hrt, r)) in self.held.iter().enumerate() {
            if *hrt != rt || b.one_in(4) {
                continue;
            }
            let st = check(unsafe { spot_record_begin(rt, r) }, "spot_record_begin");
            let outcome = if st == SPOT_OK {
                match b.u8() % 8 {
                    0 => SPOT_OUTCOME_FAILED,
                    1 => SPOT_OUTCOME_DEFERRED,
                    _ => SPOT_OUTCOME_OK,
                }
            } else {
                SPOT_OUTCOME_NOT_STARTED
            };
            if outcome == SPOT_OUTCOME_OK || outcome == SPOT_OUTCOME_FAILED {
                started.push(*r);
            }
            out.push(spot_completion {
                token: r.token,
                outcome,
                reserved: 0,
            });
            taken.push(i);
        }
        match b.u8() % 16 {
            0 => {
                let token = b.u64();
                // A made-up token (never one of a record the host holds).
                if !self.held.iter().any(|(_, r)| r.token == token) {
                    out.push(spot_completion {
                        token,
                        outcome: SPOT_OUTCOME_OK,
                        reserved: 0,
                    });
                    garbage = true;
                }
            }
            1 if !out.is_empty() => {
                let i = b.below(out.len() as u64) as usize;
                out[i].outcome = 4 + b.u32() % 1000;
                garbage = true;
            }
            _ => {}
        }
        (out, started, taken, garbage)
    }

    fn apply_completed(&mut self, started: Vec<spot_record>, mut taken: Vec<usize>) {
        for r in &started {
            self.started(r);
        }
        taken.sort_unstable();
        for i in taken.into_iter().rev() {
            self.held.swap_remove(i);
        }
    }

    fn step(&mut self, b: &mut Bytes) {
        match b.u8() % 18 {
            0 | 1 => self.create(b),
            2 => {
                let rt = self.pick_rt(b);
                let st = check(spot_runtime_free(rt), "spot_runtime_free");
                if st == SPOT_OK {
                    self.live_runtimes.retain(|&r| r != rt);
                    self.held.retain(|(h, _)| *h != rt);
                }
            }
            3 | 4 => {
                let rt = self.pick_rt(b);
                let id = b.small_or_any_u64(4);
                let lease = match b.u8() % 4 {
                    0 => 0,
                    1 => b.small_or_any_u64(50).saturating_mul(1_000_000),
                    _ => 0,
                };
                let gate = b.small_or_any_u32(2);
                let mut epoch = 0;
                let st = check(
                    unsafe { spot_owner_acquire(rt, id, lease, gate, &mut epoch) },
                    "spot_owner_acquire",
                );
                if st == SPOT_OK {
                    self.owners.push((rt, id, epoch));
                }
            }
            5..=7 => self.register(b),
            8 => {
                let (rt, t) = self.pick_timer(b);
                let mut reason = 99;
                check(
                    unsafe { spot_timer_cancel(rt, t, Self::timeout(b), &mut reason) },
                    "spot_timer_cancel",
                );
            }
            9 => {
                let (rt, t) = self.pick_timer(b);
                let (mut done, mut reason) = (7u32, 99u32);
                let tag = b.u64();
                let reason_ptr = if b.bool() {
                    &mut reason as *mut u32
                } else {
                    std::ptr::null_mut()
                };
                let done_ptr = if b.one_in(16) {
                    std::ptr::null_mut()
                } else {
                    &mut done as *mut u32
                };
                check(
                    unsafe { spot_timer_cancel_async(rt, t, tag, done_ptr, reason_ptr) },
                    "spot_timer_cancel_async",
                );
            }
            10..=12 => self.exchange(b),
            13 => {
                let rt = self.pick_rt(b);
                let (c, started, taken, garbage) = self.completions(b, rt);
                let st = check(
                    unsafe { spot_complete(rt, c.as_ptr(), c.len()) },
                    "spot_complete",
                );
                if st == SPOT_OK {
                    assert!(!garbage || c.is_empty(), "garbage completion accepted");
                    self.apply_completed(started, taken);
                }
            }
            14 => {
                let (rt, id, epoch) = self.pick_owner(b);
                match b.u8() % 3 {
                    0 => {
                        check(
                            spot_owner_renew(
                                rt,
                                id,
                                epoch,
                                b.small_or_any_u64(50).saturating_mul(1_000_000),
                            ),
                            "renew",
                        );
                    }
                    1 => {
                        check(spot_owner_revoke(rt, id, epoch), "revoke");
                    }
                    _ => {
                        check(spot_owner_release(rt, id, epoch), "release");
                    }
                }
            }
            15 => {
                let rt = self.pick_rt(b);
                let ns = match b.u8() % 8 {
                    0 => b.u64() % 10_000_000_000,
                    _ => u64::from(b.u8()) * 250_000,
                };
                check(spot_advance(rt, ns), "spot_advance");
            }
            16 => {
                let rt = self.pick_rt(b);
                let size = self.fill_struct(b, std::mem::size_of::<spot_stats>() as u32);
                let p = self.buf.as_mut_ptr().cast::<spot_stats>();
                unsafe { (*p).struct_size = size };
                check(unsafe { spot_stats(rt, p) }, "spot_stats");
                let (rt, t) = self.pick_timer(b);
                let size = self.fill_struct(b, std::mem::size_of::<spot_timer_stats>() as u32);
                let p = self.buf.as_mut_ptr().cast::<spot_timer_stats>();
                unsafe { (*p).struct_size = size };
                check(unsafe { spot_timer_stats(rt, t, p) }, "spot_timer_stats");
                let mut now = 0;
                check(unsafe { spot_now(rt, &mut now) }, "spot_now");
                let mut fd = -1;
                check(unsafe { spot_wakeup_fd(rt, &mut fd) }, "spot_wakeup_fd");
            }
            _ => {
                let (rt, id, _) = self.pick_owner(b);
                if b.bool() {
                    check(spot_owner_gate_enter(rt, id, 0), "gate_enter");
                } else {
                    check(spot_owner_gate_leave(rt, id), "gate_leave");
                }
                let st = b.u32() as i32;
                let name = spot_status_name(st);
                assert!(!name.is_null());
                let mut msg = [0 as c_char; 64];
                let n = b.below(65) as usize;
                unsafe { spot_last_error(msg.as_mut_ptr(), n) };
                if n > 0 {
                    assert!(msg[..n].contains(&0), "last error not NUL-terminated");
                }
            }
        }
    }

    fn create(&mut self, b: &mut Bytes) {
        if self.live_runtimes.len() >= 3 {
            return;
        }
        let size = self.fill_struct(b, std::mem::size_of::<spot_runtime_config>() as u32);
        let p = self.buf.as_mut_ptr().cast::<spot_runtime_config>();
        unsafe {
            (*p).struct_size = size;
            (*p).clock = match b.u8() % 16 {
                0 => SPOT_CLOCK_REAL,
                1 => b.u32(),
                _ => SPOT_CLOCK_MANUAL,
            };
            (*p).delivery = match b.u8() % 16 {
                0 | 1 => SPOT_DELIVERY_CALLBACK,
                2 => b.u32(),
                _ => SPOT_DELIVERY_EXCHANGE,
            };
            (*p).reserved = if b.one_in(16) { b.u32() } else { 0 };
            // Usually a callback with callback delivery; sometimes none, or one with
            // exchange delivery (both invalid).
            let with_callback = if (*p).delivery == SPOT_DELIVERY_CALLBACK {
                !b.one_in(4)
            } else {
                b.one_in(16)
            };
            (*p).callback = if with_callback {
                Some(batch_callback)
            } else {
                None
            };
        }
        let mut rt = 0;
        let st = check(unsafe { spot_runtime_new(p, &mut rt) }, "spot_runtime_new");
        if st == SPOT_OK {
            assert_ne!(rt, 0);
            self.runtimes.push(rt);
            self.live_runtimes.push(rt);
        } else {
            assert_eq!(rt, 0, "out_rt written on failure");
        }
    }

    fn register(&mut self, b: &mut Bytes) {
        let (rt, id, epoch) = self.pick_owner(b);
        let key = b.small_or_any_u64(8);
        let size = self.fill_struct(b, std::mem::size_of::<spot_timer_spec>() as u32);
        let p = self.buf.as_mut_ptr().cast::<spot_timer_spec>();
        unsafe {
            (*p).struct_size = size;
            (*p).policy = b.small_or_any_u32(3);
            (*p).period_ns = match b.u8() % 8 {
                0 => 0,
                1 => b.u64(),
                _ => (1 + u64::from(b.u8())) * 100_000,
            };
            (*p).first_due_ns = match b.u8() % 4 {
                0 => b.small_or_any_u64(1000).saturating_mul(100_000),
                _ => SPOT_FIRST_DUE_DEFAULT,
            };
            (*p).max_catch_up_ticks = b.small_or_any_u64(5);
            (*p).reserved = if b.one_in(16) { b.u64() } else { 0 };
        }
        // user_data: a unique number; bit 2 set = the release hook fails.
        let ud = NEXT_USER_DATA.fetch_add(2, Ordering::Relaxed) << 2 | (b.u8() as usize & 4);
        let release: spot_release_fn = if b.one_in(8) {
            None
        } else {
            Some(release_hook)
        };
        let mut t = spot_timer {
            generation: 0xdead,
            slot: 7,
            reserved: 0,
        };
        let st = check(
            unsafe {
                spot_timer_register(rt, id, epoch, key, p, ud as *mut c_void, release, &mut t)
            },
            "spot_timer_register",
        );
        if st == SPOT_OK {
            self.timers.push((rt, t));
            if release.is_some() {
                self.registered.push(ud);
            }
        } else {
            assert_eq!(t.generation, 0xdead, "out_timer written on failure");
            self.failed_registrations.push(ud);
        }
    }

    fn exchange(&mut self, b: &mut Bytes) {
        let rt = self.pick_rt(b);
        let (c, started, taken, garbage) = self.completions(b, rt);
        let cap = match b.u8() % 8 {
            0 => 0,
            1 => 1,
            _ => 64,
        };
        let mut out: Vec<spot_record> = Vec::with_capacity(64);
        let mut n = 0usize;
        let st = check(
            unsafe {
                spot_exchange(
                    rt,
                    if c.is_empty() && b.bool() {
                        std::ptr::null()
                    } else {
                        c.as_ptr()
                    },
                    c.len(),
                    out.as_mut_ptr(),
                    cap,
                    Self::timeout(b),
                    &mut n,
                )
            },
            "spot_exchange",
        );
        if st != SPOT_OK {
            return;
        }
        assert!(!garbage, "garbage completion accepted by spot_exchange");
        assert!(n <= cap);
        unsafe { out.set_len(n) };
        self.apply_completed(started, taken);
        for r in &out {
            self.note_tick(rt, r);
        }
    }

    fn finish(&mut self) {
        for rt in std::mem::take(&mut self.live_runtimes) {
            let st = check(spot_runtime_free(rt), "spot_runtime_free (final)");
            assert_eq!(st, SPOT_OK);
            assert_eq!(spot_runtime_free(rt), SPOT_E_INVALID_HANDLE, "double free");
        }
        let mut g = RELEASED.lock().unwrap_or_else(|e| e.into_inner());
        let map = g.get_or_insert_with(HashMap::new);
        for ud in &self.registered {
            assert_eq!(
                map.remove(ud),
                Some(1),
                "release hook of user_data {ud:#x} did not run exactly once"
            );
        }
        for ud in &self.failed_registrations {
            assert_eq!(
                map.remove(ud),
                None,
                "release hook ran for a failed registration"
            );
        }
    }
}

/// Interprets `data` as a sequence of C ABI calls.
pub fn run(data: &[u8]) {
    let mut b = Bytes::new(data);
    let mut m = Model {
        runtimes: Vec::new(),
        live_runtimes: Vec::new(),
        owners: Vec::new(),
        timers: Vec::new(),
        held: Vec::new(),
        seen: HashMap::new(),
        registered: Vec::new(),
        failed_registrations: Vec::new(),
        buf: Box::new([0; BUF_WORDS]),
    };
    let mut ops = 0;
    while !b.is_empty() && ops < MAX_OPS {
        m.step(&mut b);
        ops += 1;
    }
    m.finish();
}
