//! Remote commands into the running program (Palanteer's CLIs): functions registered with a
//! parameter specification, called by name with checked, typed parameters.
//!
//! * [`register`] adds a command: a name (no spaces), a [`Spec`] string such as
//!   `"min=int max=int[[100]]"`, a description, and a handler. A bad specification or a name
//!   registered twice is an error that says why.
//! * [`call`] runs a command line, `name p=v p=[[text with spaces]]`: the name must be whole; the
//!   parameters come in any order, their names cut to any unambiguous prefix, their values checked
//!   against their types, every parameter without a default present. A rejected command gets an
//!   error [`Reply`] that explains exactly what was wrong, and its handler is never called.
//!
//! * [`serve`] starts the reception thread: a Unix domain socket (mode 0600) that serves command
//!   lines to [`call`]; [`client::call`] is the other end (`phosphor call PID 'cmd p=v'`). On every
//!   platform, [`serve_tcp`] serves them on a loopback port to clients that present a token
//!   ([`client::call_tcp`], `phosphor call HOST:PORT`).

mod builtins;
pub mod client;
mod command;
mod confine;
mod server;
#[cfg(unix)]
mod socket;
mod spec;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

pub use builtins::register_builtins;
pub use command::{parse_args, split_name, Args};
pub use confine::writable_path;
pub use server::{serve_tcp, Limits, TcpServer};
#[cfg(unix)]
pub use socket::{default_socket_dir, serve, Server};
pub use spec::{Param, ParamType, Spec, Value};

/// What a command answers: success or failure, and a text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reply {
    /// Whether the command failed (a rejected command, or the handler said so).
    pub error: bool,
    /// The answer's text.
    pub text: String,
}

impl Reply {
    /// Marks the reply as failed, replacing its text with `text` (more may be added after).
    pub fn set_error(&mut self, text: impl Into<String>) {
        self.error = true;
        self.text = text.into();
    }

    /// Adds to the reply's text.
    pub fn push(&mut self, text: &str) {
        self.text.push_str(text);
    }

    fn rejected(text: String) -> Reply {
        Reply { error: true, text }
    }
}

/// A command's handler.
pub type Handler = Arc<dyn Fn(&Args, &mut Reply) + Send + Sync>;

struct Command {
    spec: Spec,
    spec_text: String,
    description: String,
    handler: Handler,
}

static COMMANDS: Mutex<BTreeMap<String, Command>> = Mutex::new(BTreeMap::new());

/// The command table, held with the thread marked busy: an event that an instrumented allocator
/// records under it is dropped rather than attach, which would take a control lock under it, the
/// reverse of a fork's `prepare`, which holds the table across the fork (a child forked while
/// another thread held it would find it held for ever). Fields drop in order: the lock first.
struct Commands {
    table: std::sync::MutexGuard<'static, BTreeMap<String, Command>>,
    _busy: crate::record::thread::BusyGuard,
}

impl std::ops::Deref for Commands {
    type Target = BTreeMap<String, Command>;
    fn deref(&self) -> &Self::Target {
        &self.table
    }
}

impl std::ops::DerefMut for Commands {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.table
    }
}

fn commands() -> Commands {
    #[cfg(unix)]
    crate::trace_log::fork::participate(&FORK_HOOKS);
    let busy = crate::record::thread::BusyGuard::enter();
    // Each step leaves the map consistent, so a poisoned lock is safe to keep using.
    Commands { table: COMMANDS.lock().unwrap_or_else(|p| p.into_inner()), _busy: busy }
}

/// The table for a fork's `prepare` (see `trace_log/fork.rs`), which holds it until the fork is
/// done. A leaf: nothing is taken under it.
#[cfg(unix)]
fn take_for_fork() -> Box<dyn std::any::Any> {
    Box::new(commands())
}

/// The control channel's part in the fork handlers: its command table held.
#[cfg(unix)]
static FORK_HOOKS: crate::trace_log::fork::ForkHooks =
    crate::trace_log::fork::ForkHooks { settle: None, take: Some(take_for_fork), in_child_first: None };

/// Registers the command `name` with its parameter specification (see [`Spec::parse`]), a
/// description (for `help`), and its handler.
pub fn register(
    name: &str,
    spec: &str,
    description: &str,
    handler: impl Fn(&Args, &mut Reply) + Send + Sync + 'static,
) -> Result<(), String> {
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(format!("{name:?} is not a command name: it must be one word"));
    }
    let parsed =
        Spec::parse(spec).map_err(|e| format!("command {name:?}: bad parameter specification: {e}"))?;
    let mut c = commands();
    if c.contains_key(name) {
        return Err(format!("the command {name:?} is already registered"));
    }
    c.insert(
        name.to_owned(),
        Command {
            spec: parsed,
            spec_text: spec.to_owned(),
            description: description.to_owned(),
            handler: Arc::new(handler),
        },
    );
    Ok(())
}

/// Runs the command line `line`: checks it against the command's specification, then calls its
/// handler (outside the registry's lock, so a handler may register or call commands).
pub fn call(line: &str) -> Reply {
    let (name, params) = split_name(line);
    let (spec, handler) = {
        let c = commands();
        let Some(cmd) = c.get(name) else {
            return Reply::rejected(format!("no command is called {name:?} (`help` lists them)"));
        };
        (cmd.spec.clone(), cmd.handler.clone())
    };
    match parse_args(&spec, params) {
        Ok(args) => {
            let mut reply = Reply::default();
            handler(&args, &mut reply);
            reply
        }
        Err(e) => Reply::rejected(format!("{name}: {e}")),
    }
}

/// Every command: name, specification and description, by name (what `help` prints).
pub fn list() -> Vec<(String, String, String)> {
    commands().iter().map(|(n, c)| (n.clone(), c.spec_text.clone(), c.description.clone())).collect()
}
