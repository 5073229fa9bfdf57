//! Remote commands: Palanteer's CLI specification and command examples, table-driven, and the
//! registry's errors.

// Palanteer's examples use the digits of π as an arbitrary default value.
#![allow(clippy::approx_constant)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use phosphor::control::{self, parse_args, Spec, Value};

const PALANTEER_SPEC: &str =
    "first=int second_param=float[[-3.14159265359]] third=string[[default string, and we can use space]]";

#[test]
fn palanteer_specifications_parse_and_bad_ones_say_why() {
    for ok in
        ["first=int second_param=float third=string", PALANTEER_SPEC, "", "msg=string", "  a=int   b=float  "]
    {
        let spec = Spec::parse(ok).unwrap_or_else(|e| panic!("{ok:?}: {e}"));
        assert_eq!(Spec::parse(&spec.to_string()).unwrap(), spec, "{ok:?} prints back to itself");
    }
    let spec = Spec::parse(PALANTEER_SPEC).unwrap();
    assert_eq!(spec.params[1].default, Some(Value::Float(-3.14159265359)));
    assert_eq!(spec.params[2].default, Some(Value::Str("default string, and we can use space".into())));
    for (bad, why) in [
        ("first=integer", "unknown type \"integer\""),
        ("first", "has no '=type'"),
        ("=int", "not a parameter name"),
        ("a=int a=float", "declared twice"),
        ("a=int[[x]]", "\"x\" is not an integer"),
        ("a=float[[1.5", "not closed"),
        ("a=string[x]", "written [[value]]"),
        ("a=int[[1]]b=int", "without a space"),
    ] {
        let e = Spec::parse(bad).unwrap_err();
        assert!(e.contains(why), "{bad:?}: {e}");
    }
}

#[test]
fn palanteer_command_examples_behave_as_its_spec_says() {
    let spec = Spec::parse(PALANTEER_SPEC).unwrap();
    let pi = Value::Float(-3.14159265359);
    let default_third = Value::Str("default string, and we can use space".into());
    // The valid examples, and the values they give.
    for (params, want) in [
        ("f=14", [Value::Int(14), pi.clone(), default_third.clone()]),
        ("second=5.3 f=14", [Value::Int(14), Value::Float(5.3), default_third.clone()]),
        ("fi=1 third=cherry", [Value::Int(1), pi.clone(), Value::Str("cherry".into())]),
        (
            "f=14 t=[[apple, banana and cherry]] s=5",
            [Value::Int(14), Value::Float(5.0), Value::Str("apple, banana and cherry".into())],
        ),
    ] {
        let args = parse_args(&spec, params).unwrap_or_else(|e| panic!("{params:?}: {e}"));
        let got: Vec<Value> = (0..3).map(|i| args.get(i).unwrap().clone()).collect();
        assert_eq!(got, want, "{params:?}");
    }
    // The invalid ones (the name check is `call`'s: see below), with their reasons.
    for (params, why) in [
        ("sec=5.3", "missing mandatory parameter: first"),
        ("second_pa=5.3 f=banana", "\"banana\" is not an integer"),
        ("f=1 th=cherry and banana", "\"and banana\" is not a parameter=value pair"),
        ("f=1 f=2", "given twice"),
        ("x=1", "no parameter is called \"x\""),
        ("f=1 t=[[open", "without closing"),
        ("f=1 s=inf", "not a finite number"),
    ] {
        let e = parse_args(&spec, params).unwrap_err();
        assert!(e.contains(why), "{params:?}: {e}");
    }
}

#[test]
fn a_prefix_must_name_one_parameter_and_a_whole_name_wins() {
    let spec = Spec::parse("min=int max=int minimum=int[[0]]").unwrap();
    let e = parse_args(&spec, "m=1").unwrap_err();
    assert!(e.contains("ambiguous") && e.contains("min") && e.contains("max"), "{e}");
    let args = parse_args(&spec, "mi=1 ma=2").unwrap_err();
    assert!(args.contains("ambiguous"), "mi may be min or minimum: {args}");
    let args = parse_args(&spec, "min=1 ma=2 minim=3").unwrap();
    assert_eq!((args.int(0), args.int(1), args.int(2)), (Some(1), Some(2), Some(3)));
    assert_eq!(args.by_name("max"), Some(&Value::Int(2)));
}

#[test]
fn registered_commands_are_called_with_checked_arguments_and_rejected_ones_never() {
    let calls = Arc::new(AtomicU32::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (c, s) = (calls.clone(), seen.clone());
    control::register("test::setRange", "min=int max=int", "sets the bounds", move |args, reply| {
        c.fetch_add(1, Ordering::Relaxed);
        let (min, max) = (args.int(0).unwrap(), args.int(1).unwrap());
        if min > max {
            reply.set_error(format!("min ({min}) must not exceed max ({max})"));
            return;
        }
        s.lock().unwrap().push((min, max));
        reply.push("ok");
    })
    .unwrap();
    let r = control::call("test::setRange mi=300 ma=500");
    assert_eq!((r.error, r.text.as_str()), (false, "ok"));
    let r = control::call("test::setRange min=9 max=1");
    assert!(r.error && r.text.contains("must not exceed"), "{r:?}");
    for bad in [
        "test::setRang min=1 max=2",
        "test::setRange min=1",
        "test::setRange min=a max=2",
        "test::setRange m=1 max=2",
    ] {
        let r = control::call(bad);
        assert!(r.error, "{bad:?} is rejected");
        assert!(!r.text.is_empty(), "{bad:?} says why");
    }
    assert_eq!(calls.load(Ordering::Relaxed), 2, "the handler ran for the two well-formed commands only");
    assert_eq!(*seen.lock().unwrap(), [(300, 500)]);
    // Registration errors.
    let e = control::register("test::setRange", "", "again", |_, _| {}).unwrap_err();
    assert!(e.contains("already registered"), "{e}");
    let e = control::register("test::bad", "x=double", "", |_, _| {}).unwrap_err();
    assert!(e.contains("unknown type"), "{e}");
    let e = control::register("two words", "", "", |_, _| {}).unwrap_err();
    assert!(e.contains("one word"), "{e}");
    assert!(control::list()
        .iter()
        .any(|(n, s, d)| n == "test::setRange" && s == "min=int max=int" && d == "sets the bounds"));
}

fn socket(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("control").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir.join("c.sock")
}

#[test]
fn the_socket_serves_many_clients_at_once_and_only_its_user() {
    use std::os::unix::fs::PermissionsExt;
    control::register("test::echo", "text=string", "echoes", |a, r| r.push(a.string(0).unwrap())).unwrap();
    let server = control::serve(Some(socket("many")), control::Limits::default()).unwrap();
    let mode = std::fs::metadata(server.path()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "only this user may connect");
    let dir_mode = std::fs::metadata(server.path().parent().unwrap()).unwrap().permissions().mode() & 0o777;
    assert_eq!(dir_mode, 0o700);
    let path = server.path().to_owned();
    let clients: Vec<_> = (0..8)
        .map(|c| {
            let path = path.clone();
            std::thread::spawn(move || {
                for k in 0..20 {
                    let r = control::client::call(
                        &path,
                        &format!("test::echo t=[[client {c} call {k}]]"),
                        timeout(),
                    )
                    .unwrap();
                    assert_eq!((r.error, r.text), (false, format!("client {c} call {k}")));
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let r = control::client::call(&path, "test::echo", timeout()).unwrap();
    assert!(r.error && r.text.contains("missing mandatory parameter: text"), "{r:?}");
    drop(server);
    assert!(!path.exists(), "the socket goes with the server");
}

fn timeout() -> std::time::Duration {
    std::time::Duration::from_secs(20)
}

#[test]
fn an_oversized_request_or_a_slow_handler_gets_an_error_and_others_are_still_served() {
    use std::io::{Read, Write};
    control::register("test::sleep", "ms=int", "sleeps", |a, r| {
        std::thread::sleep(std::time::Duration::from_millis(a.int(0).unwrap() as u64));
        r.push("awake");
    })
    .unwrap();
    let limits = control::Limits {
        max_request: 64,
        handler_timeout: std::time::Duration::from_millis(200),
        ..Default::default()
    };
    let server = control::serve(Some(socket("limits")), limits).unwrap();
    let path = server.path().to_owned();
    let mut big = std::os::unix::net::UnixStream::connect(&path).unwrap();
    big.write_all(format!("test::sleep ms={}\n", "1".repeat(100)).as_bytes()).unwrap();
    let mut reply = String::new();
    big.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("error ") && reply.contains("longer than 64 bytes"), "{reply}");
    let r = control::client::call(&path, "test::sleep ms=2000", timeout()).unwrap();
    assert!(r.error && r.text.contains("did not answer within"), "{r:?}");
    let r = control::client::call(&path, "test::sleep ms=1", timeout()).unwrap();
    assert_eq!((r.error, r.text.as_str()), (false, "awake"), "the server still serves");
    // A handler that panics is reported as a panic, with its message, at once (it was once "did
    // not answer within" the handler timeout).
    // (A server with the default handler timeout: the panic hook's backtrace alone can take longer
    // than 200 ms in a debug build.)
    control::register("test::panic", "", "panics", |_, _| panic!("the handler broke")).unwrap();
    let server = control::serve(Some(socket("panics")), control::Limits::default()).unwrap();
    let path = server.path().to_owned();
    let r = control::client::call(&path, "test::panic", timeout()).unwrap();
    assert!(r.error && r.text == "the command panicked: the handler broke", "{r:?}");
    let r = control::client::call(&path, "test::sleep ms=1", timeout()).unwrap();
    assert_eq!((r.error, r.text.as_str()), (false, "awake"), "the server still serves");
}

#[test]
fn built_in_commands_start_dump_and_stop_a_trace_and_switch_points() {
    let log: &'static phosphor::TraceLog = Box::leak(Box::new(crate::support::new_log(Default::default())));
    control::register_builtins(log).unwrap();
    let dir = socket("builtins");
    let server = control::serve(Some(dir.clone()), control::Limits::default()).unwrap();
    let call = |line: &str| control::client::call(server.path(), line, timeout()).unwrap();
    let r = call("help");
    assert!(
        !r.error && r.text.contains("trace.dump path=string") && r.text.contains("points.disable"),
        "{}",
        r.text
    );
    let r = call("trace.start categories=ctl* mode=ring size=1048576");
    assert_eq!((r.error, r.text.as_str()), (false, "started"));
    for i in 0..50u64 {
        phosphor::trace_instant!(log: log, "ctl", "ctl-ev", "i" => i);
    }
    let dump = dir.parent().unwrap().join("dump.phos");
    let r = call(&format!("trace.dump path={}", dump.display()));
    assert!(!r.error && r.text.starts_with("50 events"), "{r:?}");
    let bytes = std::fs::read(&dump).unwrap();
    let mut reader = phosphor::format::file::Reader::new(&bytes[..]).unwrap();
    let mut n = 0;
    reader.for_each_event(|_| n += 1).unwrap();
    assert_eq!(n, 50, "the dump reads back");
    let r = call("points.disable pattern=name=ctl-muted");
    assert!(!r.error, "{r:?}");
    phosphor::trace_instant!(log: log, "ctl", "ctl-muted");
    assert!(call("points.list").text.lines().any(|l| l.contains("off") && l.contains("ctl/ctl-muted")));
    let r = call("trace.status");
    assert!(r.text.starts_with("running: true"), "{}", r.text);
    let r = call("trace.start");
    assert!(r.error && r.text.contains("already running"), "{r:?}");
    let r = call("trace.stop");
    assert!(!r.error && r.text.starts_with("stopped"), "{r:?}");
    // Stopped, `trace.dump` saves the trace that stop finished (it once said "no trace is running").
    std::fs::remove_file(&dump).unwrap();
    let r = call(&format!("trace.dump path={}", dump.display()));
    assert!(!r.error && r.text.starts_with("50 events"), "{r:?}");
    assert!(dump.exists());
    assert_eq!(log.take_trace().unwrap().stats().recorded, 50, "the muted point recorded nothing");
    let r = call(&format!("trace.dump path={}", dump.display()));
    assert!(r.error && r.text.contains("none has stopped"), "taken, nothing is left to dump: {r:?}");
    assert!(call("trace.start mode=circular").text.contains("neither ring nor fixed"));
    triggers_are_armed_listed_and_disarmed(log, &call);
    dumps_stay_in_the_dump_directory(log);
}

/// `trace.trigger`: arm a spec (with a directory, the trace having none), list, fire, disarm.
fn triggers_are_armed_listed_and_disarmed(
    log: &'static phosphor::TraceLog,
    call: &dyn Fn(&str) -> control::Reply,
) {
    let r = call("trace.trigger action=arm what=[[ctl/depth>10]]");
    assert!(r.error && r.text.contains("no trace is running"), "{r:?}");
    assert_eq!(call("trace.start categories=ctl* mode=ring size=1048576").text, "started");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("ctl-triggers");
    let _ = std::fs::remove_dir_all(&dir);
    let r = call("trace.trigger action=arm what=[[ctl/depth>>10]]");
    assert!(r.error && r.text.contains("bad trigger"), "{r:?}");
    let r = call(&format!("trace.trigger action=arm what=[[ctl/depth>10]] dir={}", dir.display()));
    assert_eq!((r.error, r.text.as_str()), (false, "armed trigger 1: ctl/depth>10"), "{r:?}");
    let r = call("trace.trigger action=arm what=ctl/other>1");
    assert_eq!(r.text, "armed trigger 2: ctl/other>1", "{r:?}");
    phosphor::trace_counter!(log: log, "ctl", "depth", 11u64);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while log.triggers().dumps.is_empty() {
        assert!(std::time::Instant::now() < deadline, "no dump");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let r = call("trace.trigger action=list");
    assert!(r.text.starts_with("1 ctl/depth>10\n2 ctl/other>1\nfired 1,"), "{}", r.text);
    assert!(r.text.contains("trigger-1.phos (trigger 1,"), "{}", r.text);
    assert_eq!(call("trace.trigger action=disarm what=1").text, "disarmed trigger 1");
    let r = call("trace.trigger action=disarm what=1");
    assert!(r.error && r.text.contains("no trigger 1"), "{r:?}");
    assert_eq!(call("trace.trigger action=disarm what=all").text, "disarmed 1 triggers");
    assert!(call("trace.trigger action=fire").error);
    call("trace.stop");
}

/// A server's dump directory confines `trace.dump`; over TCP, without one, it writes nothing (the
/// token alone once let a client write anywhere the program could).
fn dumps_stay_in_the_dump_directory(log: &'static phosphor::TraceLog) {
    let call = |path: &std::path::Path, line: &str| control::client::call(path, line, timeout()).unwrap();
    let sock = socket("confined");
    let dumps = sock.parent().unwrap().join("dumps");
    std::fs::create_dir_all(&dumps).unwrap();
    let limits = control::Limits { dump_dir: Some(dumps.clone()), ..Default::default() };
    let server = control::serve(Some(sock), limits).unwrap();
    assert_eq!(call(server.path(), "trace.start").text, "started");
    phosphor::trace_instant!(log: log, "ctl", "ctl-confined");
    let r = call(server.path(), "trace.dump path=inside.phos");
    assert!(!r.error, "{r:?}");
    assert!(dumps.join("inside.phos").exists(), "a relative path is inside the directory");
    let outside = dumps.parent().unwrap().join("outside.phos");
    for bad in ["../outside.phos", outside.to_str().unwrap(), "/tmp/phosphor-confined.phos"] {
        let r = call(server.path(), &format!("trace.dump path={bad}"));
        assert!(r.error && r.text.contains("dump directory"), "{bad}: {r:?}");
    }
    assert!(!outside.exists() && !std::path::Path::new("/tmp/phosphor-confined.phos").exists());
    let e = control::serve(
        Some(socket("no-dumps")),
        control::Limits { dump_dir: Some(dumps.join("missing")), ..Default::default() },
    )
    .unwrap_err();
    assert!(e.to_string().contains("missing"), "a dump directory that does not exist: {e}");
    let token = "0123456789abcdef-dumps";
    let tcp = control::serve_tcp("127.0.0.1:0".parse().unwrap(), token, Default::default()).unwrap();
    let r = control::client::call_tcp(tcp.addr(), token, "trace.dump path=/tmp/phosphor-tcp.phos", timeout())
        .unwrap();
    assert!(r.error && r.text.contains("no dump directory"), "{r:?}");
    assert!(!std::path::Path::new("/tmp/phosphor-tcp.phos").exists());
    let limits = control::Limits { dump_dir: Some(dumps.clone()), ..Default::default() };
    let tcp = control::serve_tcp("127.0.0.1:0".parse().unwrap(), token, limits).unwrap();
    let r = control::client::call_tcp(tcp.addr(), token, "trace.dump path=tcp.phos", timeout()).unwrap();
    assert!(!r.error && dumps.join("tcp.phos").exists(), "{r:?}");
    call(server.path(), "trace.stop");
}

/// Over TCP, clients that connect and never send the token take none of the slots of clients that
/// have presented it (32 of them once locked the owner out), and make way for new ones.
#[test]
fn clients_without_the_token_cannot_lock_out_the_owner() {
    control::register("test::tcp-slots", "", "pong", |_, r| r.push("pong")).unwrap();
    let token = "0123456789abcdef-slots";
    let limits = control::Limits { max_connections: 2, max_unauthenticated: 4, ..Default::default() };
    let server = control::serve_tcp("127.0.0.1:0".parse().unwrap(), token, limits).unwrap();
    let idle: Vec<_> = (0..20).map(|_| std::net::TcpStream::connect(server.addr()).unwrap()).collect();
    for _ in 0..5 {
        let r = control::client::call_tcp(server.addr(), token, "test::tcp-slots", timeout()).unwrap();
        assert_eq!((r.error, r.text.as_str()), (false, "pong"), "the owner is served beside 20 idle clients");
    }
    // The idle clients beyond the 4 waiting places were shut down as newer ones came.
    // (A shut-down connection reads its end, or a reset; an open idle one times out.)
    let closed = idle
        .iter()
        .filter(|s| {
            use std::io::Read;
            s.set_read_timeout(Some(std::time::Duration::from_millis(200))).unwrap();
            match (&**s).read(&mut [0u8; 1]) {
                Ok(n) => n == 0,
                Err(e) => !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
            }
        })
        .count();
    assert!(closed >= 16, "{closed} of 20 idle clients were shut down");
}

#[test]
fn tcp_needs_its_token_and_loopback() {
    use std::io::{Read, Write};
    control::register("test::tcp", "", "answers over TCP", |_, r| r.push("pong")).unwrap();
    let token = "0123456789abcdef-secret";
    let server =
        control::serve_tcp("127.0.0.1:0".parse().unwrap(), token, control::Limits::default()).unwrap();
    let r = control::client::call_tcp(server.addr(), token, "test::tcp", timeout()).unwrap();
    assert_eq!((r.error, r.text.as_str()), (false, "pong"));
    let r =
        control::client::call_tcp(server.addr(), "0123456789abcdef-wrong!", "test::tcp", timeout()).unwrap();
    assert!(r.error && r.text.contains("token is required"), "{r:?}");
    // A request without the token is refused, and the command is not run.
    let mut raw = std::net::TcpStream::connect(server.addr()).unwrap();
    raw.write_all(b"test::tcp\n").unwrap();
    let mut reply = String::new();
    raw.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("error ") && !reply.contains("pong"), "{reply}");
    let e = control::serve_tcp("0.0.0.0:0".parse().unwrap(), token, control::Limits::default()).unwrap_err();
    assert!(e.to_string().contains("loopback"), "{e}");
    let e =
        control::serve_tcp("127.0.0.1:0".parse().unwrap(), "short", control::Limits::default()).unwrap_err();
    assert!(e.to_string().contains("16 characters"), "{e}");
}

#[test]
fn an_idle_client_blocks_no_one_and_the_connection_limit_is_an_error() {
    use std::io::Read;
    control::register("test::ping", "", "pong", |_, r| r.push("pong")).unwrap();
    // A client that connects and sends nothing holds its own thread only.
    let server = control::serve(Some(socket("idle")), control::Limits::default()).unwrap();
    let idle = std::os::unix::net::UnixStream::connect(server.path()).unwrap();
    let r = control::client::call(server.path(), "test::ping", timeout()).unwrap();
    assert_eq!(r.text, "pong", "served while another client idles");
    drop(idle);
    // With a limit of one connection, an idle client fills it: the next connection is answered
    // with an error (the accept loop counts the idle one before it accepts the next).
    let limits = control::Limits { max_connections: 1, ..Default::default() };
    let server = control::serve(Some(socket("conns")), limits).unwrap();
    let path = server.path().to_owned();
    let idle = std::os::unix::net::UnixStream::connect(&path).unwrap();
    let mut second = std::os::unix::net::UnixStream::connect(&path).unwrap();
    second.set_read_timeout(Some(timeout())).unwrap();
    let mut reply = String::new();
    second.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("error ") && reply.contains("too many connections"), "{reply}");
    drop(idle);
    // Once it is gone, connections are served again.
    let deadline = std::time::Instant::now() + timeout();
    loop {
        // Until the server has seen the idle client go, a call is refused (an error reply, or a
        // connection closed under the request).
        let r = control::client::call(&path, "test::ping", timeout());
        if r.as_ref().is_ok_and(|r| r.text == "pong") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never served again: {r:?}");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Another user cannot connect to the socket, and a directory that another user owns is refused.
/// Switching users needs root (CI runs as root); as another user, only the mode bits are checked.
#[test]
fn another_user_cannot_connect_or_own_the_directory() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    const NOBODY: u32 = 65534;
    let server = control::serve(Some(socket("other-user")), control::Limits::default()).unwrap();
    let meta = std::fs::metadata(server.path()).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 {
        eprintln!("not root: the connection as another user is not tried");
        return;
    }
    let path = std::ffi::CString::new(server.path().as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: sockaddr_un is plain data; all zeroes is a valid (empty) value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, s) in addr.sun_path.iter_mut().zip(path.as_bytes_with_nul()) {
        *d = *s as libc::c_char;
    }
    // SAFETY: the child calls only async-signal-safe functions (setgid, setuid, socket, connect,
    // _exit) on memory prepared before the fork, as a child of a multi-threaded process must.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: see the fork above; `addr` outlives the calls that read it.
        unsafe {
            if libc::setgid(NOBODY) != 0 || libc::setuid(NOBODY) != 0 {
                libc::_exit(100);
            }
            let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
            let r = libc::connect(
                fd,
                &addr as *const libc::sockaddr_un as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
            );
            // 0: connected; otherwise the errno (EACCES is 13).
            libc::_exit(if r == 0 { 0 } else { *libc::__errno_location() });
        }
    }
    assert!(pid > 0, "fork failed");
    let mut status = 0;
    // SAFETY: waits for the child forked above.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status));
    assert_eq!(libc::WEXITSTATUS(status), libc::EACCES, "another user is refused by the 0700 directory");
    // The root user itself still gets through.
    control::register("test::owner", "", "answers its owner", |_, r| r.push("served")).unwrap();
    let r = control::client::call(server.path(), "test::owner", timeout()).unwrap();
    assert_eq!((r.error, r.text.as_str()), (false, "served"));

    // A directory that belongs to someone else is refused with a message that says so.
    let theirs = socket("theirs");
    std::fs::create_dir_all(theirs.parent().unwrap()).unwrap();
    std::os::unix::fs::chown(theirs.parent().unwrap(), Some(NOBODY), Some(NOBODY)).unwrap();
    assert_eq!(std::fs::metadata(theirs.parent().unwrap()).unwrap().uid(), NOBODY);
    let e = control::serve(Some(theirs), control::Limits::default()).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
    assert!(e.to_string().contains("belongs to uid 65534"), "{e}");
}

/// Clients that connect to the TCP port and send nothing (no token, no request) once held every
/// connection slot for as long as they stayed, locking the owner out without knowing the token.
/// They are disconnected after `request_timeout`, and the owner is served again while they are
/// still connected.
#[test]
fn idle_clients_without_a_token_lock_the_owner_out_for_no_longer_than_the_request_timeout() {
    control::register("test::lockout", "", "pong", |_, r| r.push("pong")).unwrap();
    let token = "0123456789abcdef-owner";
    let limits = control::Limits {
        max_connections: 4,
        request_timeout: std::time::Duration::from_millis(300),
        ..Default::default()
    };
    let server = control::serve_tcp("127.0.0.1:0".parse().unwrap(), token, limits).unwrap();
    let idle: Vec<_> = (0..4).map(|_| std::net::TcpStream::connect(server.addr()).unwrap()).collect();
    let t0 = std::time::Instant::now();
    loop {
        let r = control::client::call_tcp(server.addr(), token, "test::lockout", timeout());
        if r.as_ref().is_ok_and(|r| !r.error && r.text == "pong") {
            break;
        }
        assert!(t0.elapsed() < std::time::Duration::from_secs(10), "still locked out: {r:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    drop(idle);
}
