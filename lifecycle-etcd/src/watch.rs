//! The watch over the store's prefix: every change of a location invalidates its cached
//! route and wakes its creation waiters; node keys keep the placement table current. When
//! the watch breaks, the cache is dropped and the watch starts again from a fresh read of
//! the nodes.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::stop::Stop;
use etcd_client::{Client, EventType, GetOptions, WatchOptions};

use crate::keys::{Key, Keys, NodeValue};
use crate::view::{Change, View};

/// Reads the live nodes; returns them and the revision of the read.
pub(crate) async fn read_nodes(
    client: &mut Client,
    keys: &Keys,
) -> Result<(HashMap<spot_lifecycle::NodeId, (NodeValue, i64)>, u64), etcd_client::Error> {
    let resp = client
        .get(keys.nodes(), Some(GetOptions::new().with_prefix()))
        .await?;
    let revision = resp.header().map_or(0, |h| h.revision()) as u64;
    let mut nodes = HashMap::new();
    for kv in resp.kvs() {
        if let (Some(Key::Node(n)), Some(v)) = (keys.parse(kv.key()), NodeValue::decode(kv.value()))
        {
            nodes.insert(n, (v, kv.lease()));
        }
    }
    Ok((nodes, revision))
}

/// Runs until `stop` fires; the first watch starts at `start + 1` (the nodes were read at
/// `start` by the caller).
pub(crate) async fn run(
    mut client: Client,
    keys: Keys,
    view: Arc<View>,
    mut start: u64,
    stop: Arc<Stop>,
) {
    loop {
        tokio::select! {
            _ = stop.wait() => return,
            _ = follow(&mut client, &keys, &view, start) => {}
        }
        view.lost();
        tokio::select! {
            _ = stop.wait() => return,
            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
        match read_nodes(&mut client, &keys).await {
            Ok((nodes, revision)) => {
                view.restart(nodes, revision);
                start = revision;
            }
            Err(_) => continue,
        }
    }
}

/// Follows the watch until it ends or breaks.
async fn follow(client: &mut Client, keys: &Keys, view: &View, start: u64) {
    let options = WatchOptions::new()
        .with_prefix()
        .with_start_revision(start as i64 + 1);
    let Ok(mut stream) = client.watch(keys.prefix(), Some(options)).await else {
        return;
    };
    while let Ok(Some(resp)) = stream.message().await {
        if resp.canceled() || resp.compact_revision() > 0 {
            return;
        }
        let revision = resp.header().map_or(0, |h| h.revision()) as u64;
        let mut changes = Vec::with_capacity(resp.events().len());
        for ev in resp.events() {
            let Some(kv) = ev.kv() else { continue };
            match keys.parse(kv.key()) {
                Some(Key::Location(spot)) => changes.push(Change::Location {
                    spot,
                    revision: kv.mod_revision() as u64,
                }),
                Some(Key::Node(node)) => match (ev.event_type(), NodeValue::decode(kv.value())) {
                    (EventType::Put, Some(value)) => changes.push(Change::NodePut {
                        node,
                        value,
                        lease: kv.lease(),
                    }),
                    _ => changes.push(Change::NodeGone { node }),
                },
                None => {}
            }
        }
        view.apply(changes, revision);
    }
}
