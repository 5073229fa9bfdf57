//! The client side of the control socket: what `phosphor call` uses. The Unix socket's [`call`]
//! exists on Unix only; [`call_tcp`] everywhere.

use std::io::{BufRead, BufReader, Read, Write};
#[cfg(unix)]
use std::os::unix::net::UnixStream;
#[cfg(unix)]
use std::path::Path;
use std::time::Duration;

use super::Reply;

/// Sends `line` to the control socket at `path` and returns its reply.
#[cfg(unix)]
pub fn call(path: &Path, line: &str, timeout: Duration) -> std::io::Result<Reply> {
    one_line(line)?;
    let stream = UnixStream::connect(path)?;
    stream.set_read_timeout(Some(timeout))?;
    exchange(stream, line)
}

/// Sends `line` to the TCP control port at `addr` (`serve_tcp`), presenting `token` first.
pub fn call_tcp(
    addr: std::net::SocketAddr,
    token: &str,
    line: &str,
    timeout: Duration,
) -> std::io::Result<Reply> {
    one_line(line)?;
    one_line(token)?;
    let stream = std::net::TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    let mut w = stream.try_clone()?;
    w.write_all(format!("token {token}\n").as_bytes())?;
    let mut input = BufReader::new(stream.try_clone()?);
    let greeting = read_reply(&mut input)?;
    if greeting.error {
        return Ok(greeting);
    }
    exchange(stream, line)
}

fn one_line(s: &str) -> std::io::Result<()> {
    if s.contains('\n') {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "a command is one line"));
    }
    Ok(())
}

/// Writes a request line and reads its reply. If the server stops reading before the request is
/// all written (it is over the server's size limit), the write fails with a broken pipe, but the
/// server has said why before it closed: that reply is read and returned, and only if there is
/// none does the write's error stand.
fn exchange<S: Read + Write>(mut stream: S, line: &str) -> std::io::Result<Reply> {
    let sent = stream.write_all(line.as_bytes()).and_then(|()| stream.write_all(b"\n"));
    match sent {
        Ok(()) => read_reply(&mut BufReader::new(stream)),
        Err(e)
            if matches!(e.kind(), std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset) =>
        {
            read_reply(&mut BufReader::new(stream)).map_err(|_| e)
        }
        Err(e) => Err(e),
    }
}

/// Reads one reply: `ok|error <n>\n` and `n` bytes of text.
fn read_reply(input: &mut impl BufRead) -> std::io::Result<Reply> {
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
