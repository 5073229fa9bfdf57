//! `phosphor call` and `phosphor ls` against a control socket served by this test process.

use std::os::unix::net::UnixListener;

use crate::cli::{command, scratch, stderr, stdout};

#[test]
fn call_prints_the_answer_and_a_rejected_command_exits_2() {
    phosphor::control::register("cli::add", "a=int b=int[[1]]", "adds", |args, r| {
        r.push(&(args.int(0).unwrap() + args.int(1).unwrap()).to_string());
    })
    .unwrap();
    let dir = scratch("call-files");
    let server =
        phosphor::control::serve(Some(dir.join("rt/phosphor/4242.sock")), Default::default()).unwrap();
    let sock = server.path().to_str().unwrap().to_owned();
    let out = command("call-ok").args(["call", &sock, "cli::add a=40 b=2"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "42\n");
    let out = command("call-bad").args(["call", &sock, "cli::add b=2"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("missing mandatory parameter: a"), "{}", stderr(&out));
    // A pid is looked up in the default directory ($XDG_RUNTIME_DIR/phosphor).
    let out = command("call-pid")
        .env("XDG_RUNTIME_DIR", dir.join("rt"))
        .args(["call", "4242", "cli::add a=1"])
        .output()
        .unwrap();
    assert_eq!(stdout(&out), "2\n", "{}", stderr(&out));
    let out = command("call-none").args(["call", "/nonexistent/x.sock", "help"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no answer"), "{}", stderr(&out));
}

#[test]
fn ls_lists_live_sockets_and_removes_stale_ones() {
    let dir = scratch("ls-files");
    let rt = dir.join("rt");
    let live = phosphor::control::serve(Some(rt.join("phosphor/111.sock")), Default::default()).unwrap();
    let stale = rt.join("phosphor/222.sock");
    drop(UnixListener::bind(&stale).unwrap()); // bound, then nobody accepts: a dead process's socket
    assert!(stale.exists());
    let out = command("ls").env("XDG_RUNTIME_DIR", &rt).arg("ls").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("111\t{}\n", live.path().display()));
    assert!(!stale.exists(), "the stale socket is removed");
}

#[test]
fn call_reaches_a_tcp_port_with_its_token_only() {
    phosphor::control::register("cli::tcp", "", "pong", |_, r| r.push("pong")).unwrap();
    let token = "cli-test-token-0123456789";
    let server =
        phosphor::control::serve_tcp("127.0.0.1:0".parse().unwrap(), token, Default::default()).unwrap();
    let addr = server.addr().to_string();
    let out = command("call-tcp").args(["call", &addr, "cli::tcp", "--token", token]).output().unwrap();
    assert_eq!(stdout(&out), "pong\n", "{}", stderr(&out));
    let out = command("call-tcp-bad")
        .args(["call", &addr, "cli::tcp", "--token", "wrong-token-0123456789"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("token"), "{}", stderr(&out));
    let out = command("call-tcp-none")
        .env_remove("PHOSPHOR_TOKEN")
        .args(["call", &addr, "cli::tcp"])
        .output()
        .unwrap();
    assert!(stderr(&out).contains("needs a token"), "{}", stderr(&out));
    // The token kept off the command line (which every user sees in `ps`): from a file, or from
    // the environment.
    let file = std::env::temp_dir().join(format!("phosphor-cli-token-{}", std::process::id()));
    std::fs::write(&file, format!("{token}\n")).unwrap();
    let out = command("call-tcp-file")
        .args(["call", &addr, "cli::tcp", "--token-file"])
        .arg(&file)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&file);
    assert_eq!(stdout(&out), "pong\n", "{}", stderr(&out));
    let out = command("call-tcp-env")
        .env("PHOSPHOR_TOKEN", token)
        .args(["call", &addr, "cli::tcp"])
        .output()
        .unwrap();
    assert_eq!(stdout(&out), "pong\n", "{}", stderr(&out));
}

#[test]
fn call_starts_dumps_and_stops_a_trace_through_the_built_in_commands() {
    let log: &'static phosphor::TraceLog =
        Box::leak(Box::new(phosphor::TraceLog::new(phosphor::TraceLogConfig::default()).unwrap()));
    phosphor::control::register_builtins(log).unwrap();
    let dir = scratch("call-builtins-files");
    let server = phosphor::control::serve(Some(dir.join("c.sock")), Default::default()).unwrap();
    let sock = server.path().to_str().unwrap().to_owned();
    let call = |test: &str, cmd: &str| command(test).args(["call", &sock, cmd]).output().unwrap();
    let out = call("call-start", "trace.start categories=cli* size=1048576");
    assert_eq!(stdout(&out), "started\n", "{}", stderr(&out));
    for i in 0..25u64 {
        phosphor::trace_instant!(log: log, "cli", "cli-ev", "i" => i);
    }
    let dump = dir.join("now.phos");
    let out = call("call-dump", &format!("trace.dump path={}", dump.display()));
    assert!(stdout(&out).starts_with("25 events written"), "{}{}", stdout(&out), stderr(&out));
    let out = command("call-info").args(["info", dump.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success() && stdout(&out).contains("events      25"), "{}", stdout(&out));
    let out = call("call-stop", "trace.stop");
    assert!(stdout(&out).starts_with("stopped"), "{}", stderr(&out));
    let out = call("call-help", "help");
    assert!(stdout(&out).contains("trace.dump path=string"));
}

/// The `remote_commands` example, running as a child process with its socket in `rt`; killed
/// when dropped.
struct Child {
    child: std::process::Child,
    socket: String,
}

impl Child {
    fn spawn(rt: &std::path::Path, args: &[&str]) -> Child {
        use std::io::BufRead;
        // `cargo test` builds the package's examples next to the test binary's directory.
        let exe = std::env::current_exe().unwrap();
        let example = exe.parent().unwrap().parent().unwrap().join("examples/remote_commands");
        assert!(
            example.exists(),
            "{} is built by a whole `cargo test` (or `cargo build --example remote_commands`)",
            example.display()
        );
        let mut child = std::process::Command::new(example)
            .args(args)
            .env("XDG_RUNTIME_DIR", rt)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let socket = line.trim_end().strip_prefix("socket ").expect("it prints its socket").to_owned();
        Child { child, socket }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_child_program_is_driven_by_phosphor_call() {
    let dir = scratch("child-files");
    let rt = dir.join("rt");
    let mut child = Child::spawn(&rt, &["--max-request", "256", "--handler-timeout-ms", "300"]);
    let pid = child.child.id().to_string();
    assert_eq!(child.socket, rt.join(format!("phosphor/{pid}.sock")).display().to_string());
    let call = |test: &str, cmd: &str| {
        command(test).env("XDG_RUNTIME_DIR", &rt).args(["call", &pid, cmd]).output().unwrap()
    };

    // `phosphor ls` finds it.
    let out = command("child-ls").env("XDG_RUNTIME_DIR", &rt).arg("ls").output().unwrap();
    assert_eq!(stdout(&out), format!("{pid}\t{}\n", child.socket));

    // Success, with a default and a prefix.
    let out = call("child-set", "config:setRange mi=10");
    assert_eq!((out.status.code(), stdout(&out).as_str()), (Some(0), "ok\n"), "{}", stderr(&out));
    assert_eq!(stdout(&call("child-get", "config:get")), "10 100\n");

    // Each kind of rejection: exit status 2, a message that says why, and the handler not run.
    let rejected = [
        ("config:setRange", "missing mandatory parameter: min"),
        ("config:setRange m=1", "ambiguous"),
        ("config:setRange min=ten", "min"),
        ("config:setRange min=1 colour=red", "colour"),
        ("config:set min=1", "no command is called \"config:set\""),
        ("config:setRange min=200", "min 200 is above max 100"),
    ];
    for (cmd, why) in rejected {
        let out = call("child-bad", cmd);
        assert_eq!(out.status.code(), Some(2), "{cmd}");
        assert!(stderr(&out).contains(why), "{cmd}: {}", stderr(&out));
    }
    assert_eq!(stdout(&call("child-get", "config:get")), "10 100\n", "no rejected command ran");

    // The limits: a request over 256 bytes and a handler over 300 ms get errors, and the child
    // keeps serving.
    let out = call("child-long", &format!("config:setRange min=[[{}]]", "9".repeat(300)));
    assert!(stderr(&out).contains("longer than 256 bytes"), "{}", stderr(&out));
    // A request far over the limit: the program stops reading and closes while `phosphor call` is
    // still writing, whose write then fails with a broken pipe. That must not pass for success
    // (it once did: any broken pipe exited 0 with no output); the program's reason is shown.
    let out = call("child-huge", &format!("config:setRange min=[[{}]]", "9".repeat(120 << 10)));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("longer than 256 bytes"), "{}", stderr(&out));
    let out = call("child-slow", "work:sleep ms=3000");
    assert!(stderr(&out).contains("did not answer within"), "{}", stderr(&out));
    assert_eq!(stdout(&call("child-get", "config:get")), "10 100\n");

    // Concurrent clients, each with its own range.
    concurrent_clients(&rt, &pid);
    let range = stdout(&call("child-get", "config:get"));
    assert!(range.ends_with(" 1000\n") && ["4 ", "14 ", "24 ", "34 "].iter().any(|p| range.starts_with(p)));

    // trace.start → a burst → trace.dump → read the dump with the tools.
    let out = call("child-start", "trace.start categories=burst size=4194304");
    assert_eq!(stdout(&out), "started\n", "{}", stderr(&out));
    assert_eq!(stdout(&call("child-burst", "work:burst n=500")), "500 instants\n");
    let dump = dir.join("child.phos");
    let out = call("child-dump", &format!("trace.dump path={}", dump.display()));
    assert!(stdout(&out).starts_with("500 events written"), "{}{}", stdout(&out), stderr(&out));
    let out = command("child-info").args(["info", dump.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success() && stdout(&out).contains("events      500"), "{}", stdout(&out));
    let out = command("child-stats").args(["stats", dump.to_str().unwrap()]).output().unwrap();
    assert!(stdout(&out).contains("tick"), "{}", stdout(&out));
    assert!(stdout(&call("child-stop", "trace.stop")).starts_with("stopped"));

    // A trigger armed over the channel.
    trigger_over_the_channel(&call, &dir);

    // Quit: the child exits cleanly and takes its socket with it.
    assert_eq!(stdout(&call("child-quit", "app:quit")), "bye\n");
    let status = child.child.wait().unwrap();
    assert!(status.success());
    assert!(!std::path::Path::new(&child.socket).exists(), "the socket is removed on exit");
}

/// Four clients of the child (`phosphor call` with `rt` as the runtime folder), each setting its
/// own range five times at once.
fn concurrent_clients(rt: &std::path::Path, pid: &str) {
    let clients: Vec<_> = (0..4)
        .map(|c| {
            let (rt, pid) = (rt.to_owned(), pid.to_owned());
            std::thread::spawn(move || {
                for k in 0..5 {
                    let cmd = format!("config:setRange min={} max=1000", c * 10 + k);
                    let out = command(&format!("child-many-{c}"))
                        .env("XDG_RUNTIME_DIR", &rt)
                        .args(["call", &pid, &cmd])
                        .output()
                        .unwrap();
                    assert_eq!(stdout(&out), "ok\n", "{}", stderr(&out));
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
}

/// A trigger armed over the channel (`call`: `phosphor call` of the child): each 2 ms round of the
/// child's workload is slower than 1 ms, so the first one dumps (into `dir`); list, then disarm.
fn trigger_over_the_channel(call: &impl Fn(&str, &str) -> std::process::Output, dir: &std::path::Path) {
    let out = call("child-trace-app", "trace.start categories=app size=4194304");
    assert_eq!(stdout(&out), "started\n", "{}", stderr(&out));
    let dumps = dir.join("dumps");
    let arm = format!("trace.trigger action=arm what=[[app/round>1ms]] dir={}", dumps.display());
    let out = call("child-arm", &arm);
    assert_eq!(stdout(&out), "armed trigger 1: app/round>1ms\n", "{}", stderr(&out));
    let first = dumps.join("trigger-1.phos");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !first.exists() {
        assert!(std::time::Instant::now() < deadline, "no {} within 60 s", first.display());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let list = stdout(&call("child-list", "trace.trigger action=list"));
    assert!(list.starts_with("1 app/round>1ms\nfired "), "{list}");
    assert!(list.contains(&format!("{} (trigger 1, ", first.display())), "{list}");
    let out = command("child-trigger-stats").args(["stats", first.to_str().unwrap()]).output().unwrap();
    assert!(stdout(&out).contains("round") && stdout(&out).contains("trigger"), "{}", stdout(&out));
    assert_eq!(
        stdout(&call("child-disarm", "trace.trigger action=disarm what=all")),
        "disarmed 1 triggers\n"
    );
    let out = call("child-disarm-again", "trace.trigger action=disarm what=1");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no trigger 1 is armed"), "{}", stderr(&out));
    let out = call("child-bad-trigger", "trace.trigger action=arm what=[[app/round>fast]]");
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stdout(&call("child-stop-app", "trace.stop")).starts_with("stopped"));
}
