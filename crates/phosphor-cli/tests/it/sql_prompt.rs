//! `phosphor sql` without a query: the interactive prompt on a terminal (driven through a
//! pseudo-terminal), and statements read from stdin otherwise.

#[cfg(feature = "sql")]
use crate::cli::{phosphor, scratch, stderr, stdout};

/// A demo trace in the scratch folder of `test`, and its number of slices as `phosphor sql`
/// counts them with a query given on the command line.
#[cfg(feature = "sql")]
fn demo_trace(test: &str) -> (std::path::PathBuf, u64) {
    let dir = scratch(&format!("{test}-files"));
    let out = dir.join("out");
    let o = out.to_str().unwrap();
    let run = phosphor(test, &["demo", "--threads", "2", "--events", "2000", "--out", o]);
    assert!(run.status.success(), "{}", stderr(&run));
    let file = out.join("trace.phos");
    let run = phosphor(test, &["sql", file.to_str().unwrap(), "SELECT count(*) AS n FROM slices", "--csv"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let n = stdout(&run).lines().nth(1).expect("a row").parse().expect("a count");
    assert!(n > 100, "{n}");
    (file, n)
}

#[cfg(all(feature = "sql", unix))]
#[test]
fn sql_prompt_runs_statements_over_lines_forgets_on_ctrl_c_and_keeps_history_across_runs() {
    use rexpect::reader::Options;
    use rexpect::session::spawn_with_options;

    let (file, n) = demo_trace("sql-prompt");
    let history = file.with_file_name("history");
    let start = || {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_phosphor"));
        c.arg("sql").arg(&file).env("PHOSPHOR_SQL_HISTORY", &history).env("TERM", "xterm");
        let options = Options::new().timeout_ms(Some(60_000)).strip_ansi_escape_codes(true);
        spawn_with_options(c, options).expect("phosphor sql starts on a pseudo-terminal")
    };
    // The result is computed by the prompt's query, not echoed: the typed text holds no sum.
    let sum = n + 1_000_000;

    let mut p = start();
    p.exp_string("sql> ").unwrap();
    p.send_line("SELECT count(*) + 1000000 AS n").unwrap();
    p.exp_string("-> ").unwrap();
    p.send_line("FROM slices;").unwrap();
    p.exp_string(&format!("| {sum}")).unwrap();
    p.exp_string("1 row in").unwrap();
    p.exp_string("sql> ").unwrap();
    // Ctrl-C forgets the statement being typed: the next one runs alone.
    p.send("SELECT 'forgotten' AS f").unwrap();
    p.flush().unwrap();
    p.send_control('c').unwrap();
    p.exp_string("sql> ").unwrap();
    p.send_line("SELECT 6 * 7 AS answer;").unwrap();
    p.exp_string("| 42").unwrap();
    p.exp_string("sql> ").unwrap();
    p.send_line(".tables").unwrap();
    p.exp_string("threads").unwrap();
    p.exp_string("sql> ").unwrap();
    p.send_line("SELECT nope FROM slices;").unwrap();
    p.exp_string("error:").unwrap();
    p.exp_string("sql> ").unwrap();
    // Ctrl-D quits.
    p.send_control('d').unwrap();
    p.exp_eof().unwrap();

    let saved = std::fs::read_to_string(&history).expect("the history is saved");
    assert!(saved.contains("SELECT count(*) + 1000000 AS n"), "{saved}");
    assert!(saved.contains("SELECT 6 * 7 AS answer;"), "{saved}");
    assert!(!saved.contains("forgotten"), "{saved}");

    // A second run recalls the statements, newest first: Up four times (a key at a time, each
    // shown before the next, as typed) brings back the first, its two lines, which Enter runs.
    let mut p = start();
    p.exp_string("sql> ").unwrap();
    for shown in ["SELECT nope FROM slices;", ".tables", "SELECT 6 * 7 AS answer;", "1000000 AS n"] {
        p.send("\x1b[A").unwrap();
        p.flush().unwrap();
        p.exp_string(shown).unwrap();
    }
    p.send("\r").unwrap();
    p.flush().unwrap();
    p.exp_string(&format!("| {sum}")).unwrap();
    p.exp_string("sql> ").unwrap();
    p.send_line(".quit").unwrap();
    p.exp_eof().unwrap();
}

#[cfg(all(feature = "sql", unix))]
#[test]
fn sql_prompt_ctrl_c_stops_a_running_query_and_the_prompt_goes_on() {
    use rexpect::reader::Options;
    use rexpect::session::spawn_with_options;

    let (file, n) = demo_trace("sql-prompt-stop");
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_phosphor"));
    let history = file.with_file_name("history");
    c.arg("sql").arg(&file).env("PHOSPHOR_SQL_HISTORY", &history).env("TERM", "xterm");
    let options = Options::new().timeout_ms(Some(60_000)).strip_ansi_escape_codes(true);
    let mut p = spawn_with_options(c, options).expect("phosphor sql starts on a pseudo-terminal");
    p.exp_string("sql> ").unwrap();
    assert!(line_editor_holds_the_terminal(&p), "the prompt reads keys in raw mode");
    // Thousands of slices cubed: hours of counting, so it runs until stopped.
    p.send_line("SELECT count(*) AS huge FROM slices a, slices b, slices c;").unwrap();
    p.exp_string("slices c;").unwrap();
    // Ctrl-C as the terminal sends it while a query runs (not in raw mode): SIGINT. One sent
    // before the query starts stops it as it starts; but one sent while the line editor still
    // holds the terminal is the editor's (it forgets the line), so wait until it lets go.
    wait_until_the_line_editor_lets_go(&p);
    p.process_mut().signal(rexpect::process::Signal::SIGINT).expect("SIGINT sent");
    p.exp_string("interrupted after").unwrap();
    p.exp_string("sql> ").unwrap();
    // The session goes on: the next query runs, and phosphor is still there.
    p.send_line("SELECT count(*) + 1000000 AS n FROM slices;").unwrap();
    p.exp_string(&format!("| {}", n + 1_000_000)).unwrap();
    p.exp_string("sql> ").unwrap();
    p.send_line(".quit").unwrap();
    p.exp_eof().unwrap();
}

/// Whether the line editor holds the terminal in raw mode (`ICANON` off). Rustyline puts the
/// process's SIGINT handler back before it lets the terminal go: while it holds it, a SIGINT is
/// the editor's, read as Ctrl-C on the line, and never reaches a query.
#[cfg(all(feature = "sql", unix))]
fn line_editor_holds_the_terminal(p: &rexpect::session::PtySession) -> bool {
    use std::os::fd::AsRawFd;

    let master = p.process().get_file_handle().expect("the pseudo-terminal's master");
    // SAFETY: `termios` is plain old data, for which all zeroes is a valid value.
    let mut modes: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: `tcgetattr` writes the whole struct through the pointer, which lives for the call;
    // the descriptor is open, owned by `master`. A pseudo-terminal's master reports its slave's
    // modes.
    let read = unsafe { libc::tcgetattr(master.as_raw_fd(), &mut modes) };
    assert_eq!(read, 0, "tcgetattr: {}", std::io::Error::last_os_error());
    modes.c_lflag & libc::ICANON == 0
}

/// Waits (at most a minute) until the line editor lets the terminal go.
#[cfg(all(feature = "sql", unix))]
fn wait_until_the_line_editor_lets_go(p: &rexpect::session::PtySession) {
    use std::time::{Duration, Instant};

    let deadline = Instant::now() + Duration::from_secs(60);
    while line_editor_holds_the_terminal(p) {
        assert!(Instant::now() < deadline, "the line editor kept the terminal in raw mode for 60 s");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[cfg(feature = "sql")]
#[test]
fn sql_statements_from_a_pipe_run_in_turn_with_semicolons_inside_strings_and_errors_told() {
    use std::io::Write;
    use std::process::Stdio;

    let (file, n) = demo_trace("sql-stdin");
    let mut child = crate::cli::command("sql-stdin-run")
        .args(["sql", file.to_str().unwrap(), "--csv"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let script = "SELECT count(*) AS n\nFROM slices; SELECT 'a;b' AS s;\nSELECT nope FROM slices;\n\
                  -- a comment; then\nSELECT 6 * 7 AS answer;\nSELECT 'never ended'\n";
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("n\n{n}\ns\na;b\nanswer\n42\n"));
    let err = stderr(&out);
    assert!(err.contains("query: SELECT nope FROM slices"), "{err}");
    assert!(err.contains("not run: SELECT 'never ended'"), "{err}");
    assert!(!stdout(&out).contains("sql>"), "no prompt off a terminal");
}
