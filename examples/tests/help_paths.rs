//! Every example's defaults are relative to where the user runs it: no `--help` shows the
//! path of the clone the binary was built in.
#![cfg(test)]

mod support;

use std::time::Duration;
use support::examples::run_example;

#[test]
fn no_help_names_the_build_clone() {
    let clone = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .display()
        .to_string();
    let helps: [(&str, &[&str]); 13] = [
        ("jd_optimizer", &["optimize", "--help"]),
        ("jd_optimizer", &["serve", "--help"]),
        ("jd_optimizer", &["interview", "--help"]),
        ("jd_bench", &["--help"]),
        ("job_hunter", &["run", "--help"]),
        ("job_agent_chat", &["serve", "--help"]),
        ("job_agent_chat", &["chat", "--help"]),
        ("page_explorer", &["explore", "--help"]),
        ("page_explorer", &["collect", "--help"]),
        ("resume_server", &["--help"]),
        ("load_bench", &["--help"]),
        ("live_bench", &["--help"]),
        ("llm_chat", &["--help"]),
    ];
    for (example, args) in helps {
        let run = run_example(example, args, &[], Duration::from_secs(30));
        assert_eq!(run.code, Some(0), "{example} {args:?}: {}", run.stderr);
        assert!(
            !run.stdout.contains(&clone),
            "{example} {args:?} shows the build clone {clone}:\n{}",
            run.stdout
        );
    }
}
