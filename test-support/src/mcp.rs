//! The reference MCP server `@modelcontextprotocol/server-everything` over streamable HTTP,
//! started by a test on a free loopback port and stopped when dropped.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running server-everything in `streamableHttp` mode.
pub struct EverythingHttp {
    child: Child,
    /// Its endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// Its port.
    pub port: u16,
}

impl Drop for EverythingHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Starts `bin/mcp-server-everything streamableHttp` and waits (up to 10 s) until it listens.
pub fn everything_http(bin: &Path) -> EverythingHttp {
    let port = free_port();
    let child = Command::new(bin.join("mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start server-everything streamableHttp");
    let server = EverythingHttp {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
        port,
    };
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return server;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("server-everything did not listen on {port}");
}
