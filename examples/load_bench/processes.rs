//! The server processes a bench loads, and what the kernel says they used.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use anyhow::Context as _;

/// A server process, killed on drop.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `binary` with `args` and `env`, and waits for its `listening on <url>` line.
pub fn spawn(binary: &Path, args: &[String], env: &[(&str, String)]) -> anyhow::Result<Server> {
    let mut child = Command::new(binary)
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env("RUST_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let stdout = child.stdout.take().context("the server's output")?;
    let mut lines = BufReader::new(stdout).lines();
    let mut url = None;
    for line in lines.by_ref() {
        let line = line?;
        if let Some(address) = line.strip_prefix("listening on ") {
            url = Some(address.trim().to_owned());
            break;
        }
    }
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
    let url = url.with_context(|| format!("{} did not say where it listens", binary.display()))?;
    Ok(Server { child, url })
}

/// What the kernel says processes have used so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    /// User and system CPU time, in seconds.
    pub cpu_s: f64,
    /// Resident memory, in KiB.
    pub rss_kib: f64,
}

impl std::ops::Add for Usage {
    type Output = Usage;
    fn add(self, other: Usage) -> Usage {
        Usage {
            cpu_s: self.cpu_s + other.cpu_s,
            rss_kib: self.rss_kib + other.rss_kib,
        }
    }
}

impl Server {
    /// The process's CPU time (`/proc/<pid>/stat`, at 100 ticks a second) and resident
    /// memory (`/proc/<pid>/status`).
    fn usage(&self) -> anyhow::Result<Usage> {
        let pid = self.child.id();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
        // The fields after the command name (which may hold spaces), from field 3 on.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .context("an unreadable /proc stat")?
            .1
            .split_whitespace()
            .collect();
        let ticks = |n: usize| -> anyhow::Result<f64> {
            Ok(fields
                .get(n - 3)
                .context("a short /proc stat")?
                .parse::<f64>()?)
        };
        let cpu_s = (ticks(14)? + ticks(15)?) / 100.0;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        let rss_kib = status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.split_whitespace().next())
            .context("no VmRSS")?
            .parse()?;
        Ok(Usage { cpu_s, rss_kib })
    }
}

/// What `servers` used together.
pub fn usage(servers: &[&Server]) -> anyhow::Result<Usage> {
    servers
        .iter()
        .map(|server| server.usage())
        .try_fold(Usage::default(), |sum, one| Ok(sum + one?))
}
