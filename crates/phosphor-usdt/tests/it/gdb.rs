//! The demo under `gdb -batch`: gdb finds every probe, stops at them, reads every argument, and
//! increments the semaphore of a probe it breaks on.

use crate::demo::{demo, gdb, line_after};

/// The rows of `info probes`: (provider, name, has a semaphore), one per site.
fn info_probes(release: bool) -> Vec<(String, String, bool)> {
    let text = gdb(demo(release), &["info probes"]);
    let mut rows: Vec<(String, String, bool)> = text
        .lines()
        .filter_map(|l| {
            // Type Provider Name Where [Semaphore] Object
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.first() == Some(&"stap")).then(|| (f[1].into(), f[2].into(), f.len() == 6))
        })
        .collect();
    rows.sort();
    rows
}

fn count(rows: &[(String, String, bool)], provider: &str, name: &str) -> usize {
    rows.iter().filter(|(p, n, _)| p == provider && n == name).count()
}

#[test]
fn info_probes_lists_every_probe_and_every_inlined_site() {
    for release in [false, true] {
        let rows = info_probes(release);
        let what = if release { "release" } else { "debug" };
        for (provider, name) in [
            ("demo", "empty"),
            ("demo", "all_types"),
            ("demo", "guarded"),
            ("phosphor", "db_sql__query__select"),
        ] {
            assert_eq!(count(&rows, provider, name), 1, "{what}: {provider}:{name} in {rows:?}");
        }
        assert_eq!(count(&rows, "demo", "inlined"), 3, "{what}: one site per inlined call: {rows:?}");
        // The optimiser may unroll the hot loop, copying its probe.
        assert!(count(&rows, "demo", "hot") >= 1, "{what}: {rows:?}");
        let with_semaphore: Vec<_> = rows.iter().filter(|r| r.2).map(|r| r.1.as_str()).collect();
        assert_eq!(
            with_semaphore,
            ["guarded", "db_sql__query__select"],
            "{what}: the probes with a semaphore"
        );
    }
}

#[test]
fn gdb_reads_every_argument_type_with_its_size_and_sign() {
    for release in [false, true] {
        let text = gdb(
            demo(release),
            &[
                "break -probe-stap demo:all_types",
                "run",
                "printf \"argc %d\\n\", $_probe_argc",
                "printf \"args %d %d %d %ld %u %u %u %lu %ld %lu %u %#lx\\n\", $_probe_arg0, $_probe_arg1, \
                 $_probe_arg2, $_probe_arg3, $_probe_arg4, $_probe_arg5, $_probe_arg6, $_probe_arg7, \
                 $_probe_arg8, $_probe_arg9, $_probe_arg10, $_probe_arg11",
                "kill",
            ],
        );
        let pointer = line_after(&text, "pointer ");
        assert_eq!(line_after(&text, "argc "), "12", "{text}");
        assert_eq!(
            line_after(&text, "args "),
            format!(
                "-5 -300 -70000 -5000000000 200 60000 4000000000 18446744073709551614 -42 42 1 {pointer}"
            ),
            "release {release}:\n{text}"
        );
    }
}

#[test]
fn gdb_stops_at_each_inlined_site_with_its_own_argument() {
    let text = gdb(
        demo(false),
        &[
            "break -probe-stap demo:inlined",
            "run",
            "printf \"step %u\\n\", $_probe_arg0",
            "continue",
            "printf \"step %u\\n\", $_probe_arg0",
            "continue",
            "printf \"step %u\\n\", $_probe_arg0",
            "kill",
        ],
    );
    let steps: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("step ")).collect();
    assert_eq!(steps, ["1", "2", "3"], "{text}");
    assert!(text.contains("Breakpoint 1 at") && text.contains("(3 locations)"), "{text}");
}

/// The probe is behind its semaphore (a `__sdt_local_semaphore!`): gdb's breakpoint enables it.
#[test]
fn a_string_named_probe_has_its_sanitised_name_its_semaphore_and_its_arguments() {
    let text = gdb(
        demo(true),
        &[
            "break -probe-stap phosphor:db_sql__query__select",
            "run",
            "printf \"str %u %ld\\n\", $_probe_arg0, $_probe_arg1",
            "kill",
        ],
    );
    assert_eq!(line_after(&text, "str "), "7 -7", "{text}");
}

#[test]
fn a_gdb_breakpoint_on_a_semaphore_probe_makes_sdt_enabled_true() {
    for release in [false, true] {
        let text = gdb(
            demo(release),
            &["break -probe-stap demo:guarded", "run", "printf \"guarded %u\\n\", $_probe_arg0", "continue"],
        );
        assert_eq!(line_after(&text, "guarded "), "4242", "{text}");
        assert_eq!(line_after(&text, "enabled "), "true", "{text}");
        assert_eq!(line_after(&text, "elsewhere enabled "), "true", "{text}");
        assert_eq!(line_after(&text, "expensive evaluated "), "1", "{text}");
        assert_eq!(line_after(&text, "done"), "", "the program ran to its end:\n{text}");
    }
}

#[test]
fn without_a_tool_the_semaphore_is_zero_and_guarded_arguments_are_not_evaluated() {
    for release in [false, true] {
        let out = std::process::Command::new(demo(release)).output().expect("the demo runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert_eq!(line_after(&text, "enabled "), "false", "{text}");
        assert_eq!(line_after(&text, "elsewhere enabled "), "false", "{text}");
        assert_eq!(line_after(&text, "expensive evaluated "), "0", "{text}");
    }
}
