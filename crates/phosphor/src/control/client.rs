//! The client side of the control socket: what `phosphor call` uses.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use super::Reply;

/// Sends `line` to the control socket at `path` and returns its reply.
pub fn call(path: &Path, line: &str, timeout: Duration) -> std::io::Result<Reply> {
    if line.contains('\n') {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "a command is one line"));
    }
    let mut stream = UnixStream::connect(path)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.write_all(line.as_bytes())?;
    stream.write_all(b"\n")?;
    let mut input = BufReader::new(stream);
    let mut head = String::new();
    input.read_line(&mut head)?;
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, format!("bad reply header {head:?}"));
    let (status, len) = head.trim_end().split_once(' ').ok_or_else(bad)?;
    let len: usize = len.parse().map_err(|_| bad())?;
    let error = match status {
        "ok" => false,
        "error" => true,
        _ => return Err(bad()),
    };
    let mut text = vec![0u8; len];
    input.read_exact(&mut text)?;
    Ok(Reply { error, text: String::from_utf8_lossy(&text).into_owned() })
}
