//! A node's counters: atomics bumped where things happen, read as one `NodeStats`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use spot_timer_core::{write_prometheus, Metric, MetricKind};

use crate::error::Queue;

/// A node's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// Gauge: Spots active on this node (the Entry Spot included).
    pub active_spots: u64,
    /// Counter: Spots created here (factory succeeded, Ready committed).
    pub created: u64,
    /// Counter: factory calls.
    pub factory_runs: u64,
    /// Counter: creations that failed (factory or store).
    pub creation_failures: u64,
    /// Counter: Instance Spots evicted idle.
    pub evicted: u64,
    /// Counter: Spots closed by a call or the node's shutdown.
    pub closed: u64,
    /// Counter: Spots given up because the node's authority over them ended first (its
    /// term in the store, or their owner lease): closed with `AuthorityLost`.
    pub authority_lost: u64,
    /// Counter: terms of authority the node took after its first (each after its previous
    /// term ended).
    pub terms_renewed: u64,
    /// Counter: messages admitted to a lane.
    pub messages_admitted: u64,
    /// Counter: messages whose handler ran and completed (Ok or Failed).
    pub messages_completed: u64,
    /// Counter: admitted messages that never ran (their Spot closed or its authority
    /// ended first). Once quiet: `admitted == completed + dropped`.
    pub messages_dropped: u64,
    /// Counter: admissions refused by a Spot's application lane.
    pub rejected_application_lane: u64,
    /// Counter: admissions refused by a Spot's lifecycle lane.
    pub rejected_lifecycle_lane: u64,
    /// Counter: admissions refused by the node's inbound byte budget.
    pub rejected_node_inbound: u64,
    /// Counter: activations refused by the active cap.
    pub rejected_activation: u64,
    /// Counter: messages that ended with `StaleRoute`.
    pub stale_routes: u64,
    /// Counter: timer ticks kept (deferred) because the application lane was full.
    pub ticks_deferred: u64,
    /// Counter: idle-eviction passes.
    pub eviction_passes: u64,
    /// Counter: Spots examined by those passes (at most 64 per pass).
    pub eviction_examined: u64,
}

impl NodeStats {
    /// Every field with its name and kind (gauge or counter), in declaration order: what an
    /// exporter needs, and the one list the C, Python and .NET stats are checked against.
    pub fn metrics(&self) -> Vec<Metric> {
        // Destructured whole: a field added to the struct and not here does not compile.
        let Self {
            active_spots,
            created,
            factory_runs,
            creation_failures,
            evicted,
            closed,
            authority_lost,
            terms_renewed,
            messages_admitted,
            messages_completed,
            messages_dropped,
            rejected_application_lane,
            rejected_lifecycle_lane,
            rejected_node_inbound,
            rejected_activation,
            stale_routes,
            ticks_deferred,
            eviction_passes,
            eviction_examined,
        } = *self;
        let gauge = |name, value| Metric {
            name,
            kind: MetricKind::Gauge,
            value,
        };
        let counter = |name, value| Metric {
            name,
            kind: MetricKind::Counter,
            value,
        };
        vec![
            gauge("active_spots", active_spots),
            counter("created", created),
            counter("factory_runs", factory_runs),
            counter("creation_failures", creation_failures),
            counter("evicted", evicted),
            counter("closed", closed),
            counter("authority_lost", authority_lost),
            counter("terms_renewed", terms_renewed),
            counter("messages_admitted", messages_admitted),
            counter("messages_completed", messages_completed),
            counter("messages_dropped", messages_dropped),
            counter("rejected_application_lane", rejected_application_lane),
            counter("rejected_lifecycle_lane", rejected_lifecycle_lane),
            counter("rejected_node_inbound", rejected_node_inbound),
            counter("rejected_activation", rejected_activation),
            counter("stale_routes", stale_routes),
            counter("ticks_deferred", ticks_deferred),
            counter("eviction_passes", eviction_passes),
            counter("eviction_examined", eviction_examined),
        ]
    }

    /// The node's counters in the Prometheus text format (0.0.4), every name prefixed with
    /// `prefix` (gauges `<prefix>_<name>`, counters `<prefix>_<name>_total`).
    pub fn prometheus(&self, prefix: &str) -> String {
        let mut out = String::with_capacity(2048);
        write_prometheus(&mut out, &self.metrics(), prefix);
        out
    }
}

#[derive(Default)]
pub(super) struct Counters {
    pub(super) created: AtomicU64,
    pub(super) factory_runs: AtomicU64,
    pub(super) creation_failures: AtomicU64,
    pub(super) evicted: AtomicU64,
    pub(super) closed: AtomicU64,
    pub(super) lost: AtomicU64,
    pub(super) terms: AtomicU64,
    pub(super) messages_admitted: AtomicU64,
    pub(super) messages_completed: AtomicU64,
    pub(super) messages_dropped: AtomicU64,
    pub(super) rejected: [AtomicU64; 4],
    pub(super) stale_routes: AtomicU64,
    pub(super) ticks_deferred: AtomicU64,
    pub(super) eviction_passes: AtomicU64,
    pub(super) eviction_examined: AtomicU64,
}

impl Counters {
    pub(super) fn reject(&self, queue: Queue) {
        self.rejected[queue as usize].fetch_add(1, Relaxed);
    }
}
