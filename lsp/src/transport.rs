//! The stdio transport: `Content-Length` framed JSON-RPC messages on two threads. Unlike
//! `lsp_server::Connection::stdio`, a payload that is not a JSON-RPC message is answered with a
//! parse error and skipped instead of closing the connection.

use crossbeam_channel::{unbounded, Sender};
use lsp_server::{Connection, ErrorCode, Message, RequestId, Response};
use std::io::{BufRead, Write};
use std::thread::JoinHandle;

/// Reading one framed message.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The stream failed or ended in the middle of a message.
    #[error("reading a message: {0}")]
    Io(#[from] std::io::Error),
    /// A header block without a usable `Content-Length`.
    #[error("a message header without a valid Content-Length")]
    BadHeader,
}

/// Reads one message's payload; `Ok(None)` at the end of the stream.
pub fn read_frame(r: &mut impl BufRead) -> Result<Option<String>, FrameError> {
    let mut length = None;
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return if length.is_none() {
                Ok(None)
            } else {
                Err(FrameError::BadHeader)
            };
        }
        let header = line.trim_end();
        if header.is_empty() {
            if length.is_none() {
                // A stray blank line between messages.
                continue;
            }
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = Some(
                    value
                        .trim()
                        .parse::<usize>()
                        .map_err(|_| FrameError::BadHeader)?,
                );
            }
        }
    }
    let mut buf = vec![0; length.unwrap_or(0)];
    r.read_exact(&mut buf)?;
    Ok(Some(String::from_utf8_lossy(&buf).into_owned()))
}

/// The reader thread: messages go to the server, answers to unreadable payloads to the client.
fn reader_loop(to_server: Sender<Message>, to_client: Sender<Message>) -> std::io::Result<()> {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    loop {
        let text = match read_frame(&mut input) {
            Ok(Some(t)) => t,
            Ok(None) => return Ok(()),
            Err(FrameError::BadHeader) => continue,
            Err(FrameError::Io(e)) => return Err(e),
        };
        match serde_json::from_str::<Message>(&text) {
            Ok(msg) => {
                let exit = matches!(&msg, Message::Notification(n) if n.method == "exit");
                if to_server.send(msg).is_err() || exit {
                    return Ok(());
                }
            }
            Err(e) => {
                let answer = Response::new_err(
                    RequestId::from(String::new()),
                    ErrorCode::ParseError as i32,
                    format!("not a JSON-RPC message: {e}"),
                );
                if to_client.send(Message::Response(answer)).is_err() {
                    return Ok(());
                }
            }
        }
    }
}

/// A connection over stdin/stdout and the threads serving it.
pub struct StdioThreads {
    reader: JoinHandle<std::io::Result<()>>,
    writer: JoinHandle<std::io::Result<()>>,
}

impl StdioThreads {
    /// Waits for both threads (the writer ends once every sender is dropped).
    pub fn join(self) -> std::io::Result<()> {
        let r = self.reader.join().unwrap_or(Ok(()));
        let w = self.writer.join().unwrap_or(Ok(()));
        r.and(w)
    }
}

/// A connection on stdin/stdout.
pub fn stdio() -> (Connection, StdioThreads) {
    let (to_client, from_server) = unbounded::<Message>();
    let (to_server, from_client) = unbounded::<Message>();
    let writer = std::thread::spawn(move || {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        for msg in from_server {
            msg.write(&mut out)?;
            out.flush()?;
        }
        Ok(())
    });
    let replies = to_client.clone();
    let reader = std::thread::spawn(move || reader_loop(to_server, replies));
    (
        Connection {
            sender: to_client,
            receiver: from_client,
        },
        StdioThreads { reader, writer },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_read_and_bad_headers_reported() {
        let mut input = std::io::Cursor::new(
            "Content-Length: 2\r\n\r\n{}\r\nContent-Type: x\r\nContent-Length: 1\r\n\r\n1",
        );
        assert_eq!(read_frame(&mut input).ok().flatten().as_deref(), Some("{}"));
        assert_eq!(read_frame(&mut input).ok().flatten().as_deref(), Some("1"));
        assert!(matches!(read_frame(&mut input), Ok(None)));
        let mut bad = std::io::Cursor::new("Content-Length: x\r\n\r\n");
        assert!(matches!(read_frame(&mut bad), Err(FrameError::BadHeader)));
    }
}
