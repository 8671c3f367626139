//! The README's "Several nodes" snippet, compiled and run against etcd (`make
//! test-cluster`); the test also checks that every line of the README's snippet is a line
//! of this file.

use std::sync::Arc;
use std::time::Duration;

use spot_lifecycle::*;
use spot_lifecycle_etcd::{EtcdConfig, EtcdLocationStore};

#[rustfmt::skip]
fn readme_snippet(endpoints: [String; 1]) -> Result<Arc<Node>> {
    // ---- the README snippet, line for line ----
    let mut cfg = EtcdConfig::with_endpoints(endpoints);     // e.g. ["http://127.0.0.1:2379"]
    cfg.lease_ttl = Duration::from_secs(10);                  // the node's owner lease
    let store = Arc::new(EtcdLocationStore::connect(cfg)?);   // a readable error if unreachable
    let node = Node::start(NodeConfig { node: NodeId(2), entry: SpotId(u64::MAX - 2),
                                        listen: Some(([0, 0, 0, 0], 0).into()), // any free port
                                        ..NodeConfig::default() }, store, None)?;
    node.send_or_create(SpotId(7), *b"hello")?;    // reserved and committed in etcd
    // ---- end of the snippet ----
    Ok(node)
}

#[test]
#[ignore = "needs etcd: make test-cluster"]
fn the_readme_snippet_runs() {
    let endpoint = std::env::var("SPOT_ETCD_ENDPOINT")
        .expect("SPOT_ETCD_ENDPOINT is not set: run these tests with `make test-cluster`");
    let node = readme_snippet([endpoint]).unwrap();
    assert_eq!(node.stats().created, 2, "its Entry Spot and Spot 7");
    assert_ne!(
        node.address().map(|a| a.port()),
        Some(0),
        "listening on the port bound"
    );
    assert!(node.address().is_some());
    node.shutdown();
}

#[test]
fn the_readme_shows_this_snippet() {
    let readme = include_str!("../../README.md");
    let start = readme
        .find("## Several nodes (etcd)")
        .expect("the README's several-nodes section");
    let block = &readme[start..];
    let code = &block[block.find("```rust").unwrap() + 7..];
    let code = &code[..code.find("```").unwrap()];
    let here: Vec<&str> = include_str!("readme_snippet.rs")
        .lines()
        .map(str::trim)
        .collect();
    let missing: Vec<&str> = code
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !here.contains(l))
        .collect();
    assert!(
        missing.is_empty(),
        "README lines not in this test: {missing:#?}"
    );
}
