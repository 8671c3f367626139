//! The README's lifecycle snippet, compiled and run on a real clock; the test also checks
//! that every line of the README's snippet is a line of this file.

use std::sync::Arc;
use std::time::Duration;

use spot_lifecycle::*;

#[rustfmt::skip]
fn readme_snippet() -> Result<Vec<Vec<u8>>> {
    let mut seen = Vec::new();
    // ---- the README snippet, line for line ----
    let node = Node::start(NodeConfig::default(), Arc::new(EmbeddedStore::new()), None)?;
    node.send_or_create(SpotId(7), *b"hello")?;          // creates Instance Spot 7
    let mut batch = Vec::new();
    node.exchange(&[], &mut batch, 1024, Some(Duration::from_millis(50)))?;
    for rec in &batch {
        if node.begin(rec) {
            if let SpotRecord::Message(m) = rec { println!("{:?}", m.payload()); }
            if let SpotRecord::Message(m) = rec { seen.push(m.payload().to_vec()); }
        }
    }
    let done: Vec<_> = batch.iter().map(|r| r.complete(Outcome::Ok)).collect();
    node.complete(&done)?;
    // ---- end of the snippet ----
    assert_eq!(node.stats().messages_completed, 1);
    Ok(seen)
}

#[test]
fn the_readme_snippet_runs() {
    assert_eq!(readme_snippet().unwrap(), vec![b"hello".to_vec()]);
}

#[test]
fn the_readme_shows_this_snippet() {
    let readme = include_str!("../../README.md");
    let start = readme
        .find("## Spots: the lifecycle layer")
        .expect("the README's lifecycle section");
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
