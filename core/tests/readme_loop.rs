//! The README's Rust loop, compiled and run: a user copying it as a template gets a
//! delivery driver and a host that stop, hand back their last outcomes, and can then
//! cancel with a blocking call. The test also checks that every line of the README's
//! snippet is still a line of this file, so the two cannot drift apart.

use spot_timer_core::*;

#[rustfmt::skip]
fn readme_loop() -> Result<EndReason> {
    // ---- the README snippet, line for line ----
    use std::time::Duration;
    use spot_timer_core::*;
    use spot_timer_core::driver::{Driver, Host, TimerSource, Verdict};

    let rt: Runtime<&str> = Runtime::new(RuntimeConfig::default())?;          // real clock
    let owner = rt.acquire_owner(42, OwnerOptions::lease(Duration::from_secs(5)))?;
    let timer = owner.register(1, TimerSpec::every(Duration::from_millis(100))
            .policy(OverrunPolicy::CatchUpBounded).max_catch_up_ticks(3), "tick!", None)?;

    struct Print(u32);                        // a host: run one record, say how it went
    impl Host<TimerSource<&'static str>> for Print {
        fn run(&mut self, rec: &Record<&'static str>) -> Verdict {
            if let Record::Tick(t) = rec {   // its start is already claimed (T1/T2/T6)
                println!("{} {:?}", t.payload(), t.tick());
                self.0 += 1;
            }
            Verdict::Done(Outcome::Ok)
        }
    }
    let mut driver = Driver::new(TimerSource::new(&rt, 1024)?);  // this thread's delivery
    let mut host = Print(0);
    while host.0 < 5 {
        driver.deliver(&mut host, Some(Duration::from_millis(50)), 1024)?;  // one exchange per batch
    }
    driver.flush()?;                                     // hand back the last outcomes
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
