//! Liveness evidence from etcd: a background task asks etcd, every TTL/6, how much of each
//! other live node's lease is left. A live node renews every TTL/3, so at least about
//! two thirds of its TTL is always left; a node with less than half left (in etcd's whole
//! seconds) has missed its keep-alives — it is Down, its Spots Unavailable, until its lease
//! ends (its keys go) or it renews again. These requests are on no request path.

use std::sync::Arc;
use std::time::Duration;

use etcd_client::Client;

use crate::lease::CurrentLease;
use crate::stop::Stop;
use crate::view::View;

/// True when a lease with `left` whole seconds of `granted` has missed keep-alives.
pub(crate) fn missed(left: i64, granted: i64) -> bool {
    left <= 0 || (left + 1) * 2 <= granted
}

pub(crate) async fn run(mut client: Client, view: Arc<View>, own: CurrentLease, stop: Arc<Stop>) {
    let every = (own.read().ttl / 6).max(Duration::from_millis(200));
    loop {
        tokio::select! {
            _ = stop.wait() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let own_id = own.read().id;
        let leases: Vec<_> = view
            .known
            .lock()
            .leases
            .iter()
            .filter(|(_, l)| **l != own_id && **l != 0)
            .map(|(n, l)| (*n, *l))
            .collect();
        for (node, lease) in leases {
            let Ok(answer) = client.lease_time_to_live(lease, None).await else {
                continue;
            };
            let gone = missed(answer.ttl(), answer.granted_ttl());
            let mut k = view.known.lock();
            if k.leases.get(&node) != Some(&lease) {
                continue;
            }
            if gone {
                k.missed.insert(node);
            } else {
                k.missed.remove(&node);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::missed;

    #[test]
    fn a_renewing_node_is_never_missed_and_a_silent_one_is() {
        for granted in 2..=60 {
            // A live node renews every TTL/3: at least 2/3 of TTL (minus a little) left,
            // which etcd rounds down to whole seconds.
            let live_floor = ((granted as f64) * 2.0 / 3.0 - 0.2).floor() as i64;
            assert!(!missed(live_floor, granted), "granted {granted}");
            assert!(missed(0, granted));
        }
    }
}
