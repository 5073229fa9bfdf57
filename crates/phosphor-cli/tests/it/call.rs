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
    let out = command("call-tcp-none").args(["call", &addr, "cli::tcp"]).output().unwrap();
    assert!(stderr(&out).contains("needs --token"), "{}", stderr(&out));
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
