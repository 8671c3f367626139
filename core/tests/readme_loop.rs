//! The README's Rust loop, compiled and run: a user copying it as a template gets a loop
//! that stops, hands back its last completions, and can then cancel with a blocking call
//! (which returns `WouldDeadlock` if a completion is never handed back). The test also
//! checks that every line of the README's snippet is still a line of this file, so the
//! two cannot drift apart.

use spot_timer_core::*;

#[rustfmt::skip]
fn readme_loop() -> Result<EndReason> {
    // ---- the README snippet, line for line ----
    use std::time::Duration;
    use spot_timer_core::*;

    let rt: Runtime<&str> = Runtime::new(RuntimeConfig::default())?;          // real clock
    let owner = rt.acquire_owner(42, OwnerOptions::lease(Duration::from_secs(5)))?;
    let timer = owner.register(1, TimerSpec::every(Duration::from_millis(100))
            .policy(OverrunPolicy::CatchUpBounded).max_catch_up_ticks(3), "tick!", None)?;

    let (mut batch, mut done) = (Vec::new(), Vec::new());
    let mut ticks = 0;
    while ticks < 5 {
        rt.exchange(&done, &mut batch, 1024, Some(Duration::from_millis(50)))?;  // one crossing
        done.clear();
        for rec in batch.drain(..) {
            if let Record::Tick(t) = rec {
                if rt.begin(&t) {                       // T1/T2/T6 re-check right before start
                    println!("{} {:?}", t.payload(), t.tick());
                    ticks += 1;
                    done.push(t.complete(Outcome::Ok));
                } else {
                    done.push(t.complete(Outcome::NotStarted));
                }
            }
        }
    }
    rt.complete(&done)?;                                 // hand back the last completions
    let reason = timer.cancel(Some(Duration::from_secs(1)))?;  // EndReason::Cancelled
    // ---- end of the snippet ----
    Ok(reason)
}

#[test]
fn the_readme_loop_runs_stops_and_cancels() {
    assert_eq!(readme_loop().unwrap(), EndReason::Cancelled);
}

#[test]
fn the_readme_shows_this_loop() {
    let readme = include_str!("../../README.md");
    let start = readme
        .find("## Using the core from Rust")
        .expect("the README's Rust section");
    let block = &readme[start..];
    let code = &block[block.find("```rust").unwrap() + 7..];
    let code = &code[..code.find("```").unwrap()];
    let here: Vec<&str> = include_str!("readme_loop.rs")
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
