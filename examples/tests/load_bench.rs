//! `load_bench` runs as documented, small: a few sessions on one SQLite process and on
//! two `resume_server` instances over the real PostgreSQL and NATS (`POSTGRES_URL`,
//! `NATS_URL`, else the machine's servers), every client reaching its session's first
//! gate. The figures themselves are not asserted (`docs/BENCHMARKS.md` has them).
#![cfg(test)]

mod support;

use std::time::Duration;

use support::examples::run_example;

#[test]
fn both_deployments_serve_every_session_to_its_first_gate() {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/resume");
    let run = run_example(
        "load_bench",
        &[
            "--sessions",
            "20",
            "--fixtures",
            fixtures,
            "--patience",
            "60",
        ],
        &[],
        Duration::from_secs(240),
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    for deployment in ["sqlite", "two-instances"] {
        assert!(
            run.stdout
                .contains(&format!("reached_gate{{{deployment}}} 20 sessions")),
            "{}\n{}",
            run.stdout,
            run.stderr
        );
        assert!(
            run.stdout
                .contains(&format!("failed{{{deployment}}} 0 sessions"))
        );
    }
}
