//! `load_bench` runs as documented, small: a few sessions on one SQLite process and on
//! two instances over the real PostgreSQL and NATS (`POSTGRES_URL`, `NATS_URL`, else the
//! machine's servers), in both workloads: every burst client reaching its session's first
//! gate, every steady client reading its session's ticks to the end. The figures
//! themselves are not asserted (`docs/BENCHMARKS.md` has them).
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
                .contains(&format!("sessions{{{deployment}}} 20 sessions")),
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

#[test]
fn the_steady_workload_delivers_every_tick_on_both_deployments() {
    let run = run_example(
        "load_bench",
        &[
            "--workload",
            "steady",
            "--sessions",
            "10",
            "--seconds",
            "2",
            "--every-ms",
            "100",
            "--patience",
            "60",
        ],
        &[],
        Duration::from_secs(240),
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    for deployment in ["sqlite", "two-instances"] {
        for line in [
            format!("sessions{{{deployment}}} 10 sessions"),
            format!("failed{{{deployment}}} 0 sessions"),
            // 20 ticks and the terminal event, for each of the 10 sessions.
            format!("events{{{deployment}}} 210 events"),
            format!("delivery_ms{{{deployment},p99}}"),
        ] {
            assert!(
                run.stdout.contains(&line),
                "{line}\n{}\n{}",
                run.stdout,
                run.stderr
            );
        }
    }
}
