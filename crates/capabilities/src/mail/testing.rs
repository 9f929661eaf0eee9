//! A real SMTP server for tests (feature `testing`): Python's aiosmtpd on a free loopback
//! port, writing a Maildir, killed on drop. `pip install aiosmtpd` (`cargo xtask` does).
//! Failures panic, as test assertions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// aiosmtpd on a free port.
pub struct SmtpServer {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    dir: tempfile::TempDir,
}

impl SmtpServer {
    /// Starts it and waits until it listens (up to 20 s); panics saying why it could not.
    pub fn start() -> Self {
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let log = std::fs::File::create(dir.path().join("server.log")).unwrap();
        let child = Command::new(&python)
            .args(["-m", "aiosmtpd", "-n", "-l"])
            .arg(format!("127.0.0.1:{port}"))
            .args(["-c", "aiosmtpd.handlers.Mailbox"])
            .arg(dir.path().join("maildir"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {python} for aiosmtpd: {e}"));
        let mut server = SmtpServer { child, port, dir };
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_err() {
            if let Some(status) = server.child.try_wait().unwrap() {
                panic!(
                    "aiosmtpd exited ({status}) before listening (pip install aiosmtpd):\n{}",
                    server.log()
                );
            }
            assert!(
                Instant::now() < deadline,
                "aiosmtpd did not listen on port {port} within 20 s:\n{}",
                server.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    /// What the server wrote to its log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// `smtp://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// The messages delivered so far, oldest file name first.
    pub fn messages(&self) -> Vec<String> {
        let mut files: Vec<PathBuf> = ["new", "cur"]
            .iter()
            .filter_map(|sub| std::fs::read_dir(self.dir.path().join("maildir").join(sub)).ok())
            .flat_map(|entries| entries.map(|e| e.unwrap().path()))
            .collect();
        files.sort();
        files
            .iter()
            .map(|f| String::from_utf8(std::fs::read(f).unwrap()).unwrap())
            .collect()
    }

    /// The messages delivered, waiting up to 5 s until there are `count`.
    pub fn messages_when(&self, count: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let messages = self.messages();
            if messages.len() >= count || Instant::now() > deadline {
                return messages;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
