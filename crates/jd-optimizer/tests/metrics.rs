//! Every optimization reports spec 003's metrics as one `jd_optimizer::metrics` event.
//! (Alone in its test binary: a thread-local subscriber sees every event only when no
//! other test races it for the event's call site.)
#![cfg(test)]

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::{Script, gap_answer, optimizer, pair, run, sre_analysis, sre_rewrite};

/// Log lines written by the tracing subscriber of a test.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "current_thread")]
async fn every_optimization_reports_its_metrics() {
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let script = Script::new()
        .json("analyzer", sre_analysis())
        .json("rewriter", sre_rewrite())
        .json("gap", gap_answer());
    let (optimizer, _) = optimizer(&script);
    let done = run(&optimizer, &pair("senior-sre")).await.0.unwrap();
    let logged = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
    assert!(logged.contains("optimization metrics"), "{logged}");
    let tokens = format!("pipeline_tokens={}", done.result.total_tokens_used);
    for field in [
        tokens.as_str(),
        "pipeline_model_calls=3",
        "cache_jd_hit_rate=0",
        "budget_stopped=false",
    ] {
        assert!(logged.contains(field), "{field}: {logged}");
    }
}
