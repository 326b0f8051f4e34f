//! A private `redis-server` on its own port, for tests that stop and restart Redis.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::wait::until_blocking;

/// A private redis-server without persistence; killed on drop.
pub struct PrivateRedis {
    child: Child,
    pub port: u16,
}

impl PrivateRedis {
    /// Start one on `port`; panics naming the cause when `redis-server` is missing or
    /// never listens (a test that needs it must fail loudly, never pass by skipping).
    pub fn start(port: u16) -> PrivateRedis {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect(
                "redis-server is not on PATH: scripts/services.sh installs it (make test runs it)",
            );
        until_blocking(
            Duration::from_secs(30),
            &format!("redis-server to listen on port {port}"),
            || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
        );
        PrivateRedis { child, port }
    }

    /// Start one on a free port.
    pub fn start_anywhere() -> PrivateRedis {
        PrivateRedis::start(crate::free_port())
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Kill it (an outage); [`PrivateRedis::start`] on the same port brings one back.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        self.stop();
    }
}
