//! `phosphor call TARGET 'cmd p=v'` and `phosphor ls`: remote commands into running programs
//! (`phosphor::control`). TARGET is a process id (its socket in the default directory), a socket
//! path, or `host:port` of a TCP control port (with `--token`). Control sockets are Unix domain
//! sockets: on other systems (Windows) only a TCP port can be called, and `phosphor ls` says why it
//! has nothing to list.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
#[cfg(unix)]
use phosphor::control::default_socket_dir;
use phosphor::control::{client, Reply};

/// Options of `phosphor call`.
#[derive(Debug, Args)]
pub struct CallArgs {
    /// A process id, or the path of a control socket.
    target: String,
    /// The command line, e.g. 'trace.dump path=/tmp/now.phos' (one argument: quote it).
    command: String,
    /// Seconds to wait for the answer.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// The token of a TCP control port (TARGET `host:port`). Every user sees a command line
    /// (`ps`): prefer `--token-file` or the `PHOSPHOR_TOKEN` environment variable.
    #[arg(long, conflicts_with = "token_file")]
    token: Option<String>,
    /// A file whose first line is the token of a TCP control port.
    #[arg(long)]
    token_file: Option<PathBuf>,
}

/// The token: `--token`, else the first line of `--token-file`, else `PHOSPHOR_TOKEN`.
fn token(args: &CallArgs) -> anyhow::Result<Option<String>> {
    if let Some(t) = &args.token {
        return Ok(Some(t.clone()));
    }
    if let Some(path) = &args.token_file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("{}: cannot read the token", path.display()))?;
        let line = text.lines().next().unwrap_or("").trim();
        anyhow::ensure!(!line.is_empty(), "{}: the token file is empty", path.display());
        return Ok(Some(line.to_owned()));
    }
    Ok(std::env::var("PHOSPHOR_TOKEN").ok().filter(|t| !t.is_empty()))
}

/// The socket of `target`.
#[cfg(unix)]
fn socket(target: &str) -> PathBuf {
    match target.parse::<u32>() {
        Ok(pid) => default_socket_dir().join(format!("{pid}.sock")),
        Err(_) => PathBuf::from(target),
    }
}

/// Runs `phosphor call`: prints the answer; a command that failed is an error (exit status 2).
pub fn run(args: &CallArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let timeout = Duration::from_secs(args.timeout);
    let reply = match args.target.parse::<std::net::SocketAddr>() {
        Ok(addr) => {
            let token = token(args)?
                .context("a TCP target needs a token: --token-file, PHOSPHOR_TOKEN or --token")?;
            client::call_tcp(addr, &token, &args.command, timeout)
                .with_context(|| format!("{addr}: no answer from the control port"))?
        }
        Err(_) => call_socket(args, timeout)?,
    };
    if reply.error {
        anyhow::bail!("{}", reply.text.trim_end());
    }
    write!(out, "{}", reply.text)?;
    if !reply.text.is_empty() && !reply.text.ends_with('\n') {
        writeln!(out)?;
    }
    Ok(out.flush()?)
}

/// Calls the control socket that `args.target` names (a process id or a path).
#[cfg(unix)]
fn call_socket(args: &CallArgs, timeout: Duration) -> anyhow::Result<Reply> {
    let path = socket(&args.target);
    client::call(&path, &args.command, timeout)
        .with_context(|| format!("{}: no answer from the control socket", path.display()))
}

/// Control sockets are Unix domain sockets: elsewhere only a TCP port can be called.
#[cfg(not(unix))]
fn call_socket(args: &CallArgs, _timeout: Duration) -> anyhow::Result<Reply> {
    anyhow::bail!(
        "{}: not host:port; control sockets (a process id or a socket path) are Unix domain sockets, \
         which programs do not serve on this system: call the program's TCP control port \
         (host:port, with --token-file or PHOSPHOR_TOKEN)",
        args.target
    )
}

/// Runs `phosphor ls`: the live processes with a control socket in the default directory. A
/// socket whose process is gone (it refuses connections) is removed.
#[cfg(unix)]
pub fn ls(out: &mut impl Write) -> anyhow::Result<()> {
    let dir = default_socket_dir();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("{}: cannot list", dir.display())),
    };
    let mut live = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        let Some(pid) = path.file_stem().and_then(|s| s.to_str()).and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if path.extension().is_none_or(|x| x != "sock") {
            continue;
        }
        // A socket nobody accepts on is stale: its process died without removing it.
        match std::os::unix::net::UnixStream::connect(&path) {
            Ok(_) => live.push((pid, path)),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                let _ = std::fs::remove_file(&path);
            }
            Err(_) => {}
        }
    }
    live.sort();
    for (pid, path) in live {
        writeln!(out, "{pid}\t{}", path.display())?;
    }
    Ok(out.flush()?)
}

/// `phosphor ls` lists control sockets, which are Unix domain sockets.
#[cfg(not(unix))]
pub fn ls(_out: &mut impl Write) -> anyhow::Result<()> {
    anyhow::bail!(
        "phosphor ls lists control sockets, which are Unix domain sockets and do not exist on this \
         system: call a program's TCP control port with `phosphor call HOST:PORT`"
    )
}
