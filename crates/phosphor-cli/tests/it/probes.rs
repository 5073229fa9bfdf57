//! `phosphor probes`: the same notes as the system's `readelf -n`, run-time addresses and
//! semaphore counts of a process, and bad input.
//!
//! The probe-carrying program is phosphor-usdt's example `usdt_demo`, compiled by that crate's
//! test helpers (shared through `#[path]`); gdb and readelf must be installed.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::cli::{phosphor, scratch, stderr, stdout};

#[allow(dead_code)]
#[path = "../../../phosphor-usdt/tests/it/demo.rs"]
mod demo;

use demo::{demo, tool};

/// One probe site as (provider, name, address, semaphore or 0, argument specs).
type SiteRow = (String, String, u64, u64, String);

/// The notes of `file` as `readelf -n` prints them, each address moved by `shift` (the prelink
/// correction: `.stapsdt.base`'s address minus the base in the note).
fn readelf_sites(file: &Path, stapsdt_base: Option<u64>) -> Vec<SiteRow> {
    let out = tool("readelf", &["-n", file.to_str().unwrap()]);
    assert!(out.status.success(), "readelf -n {}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let hex = |s: &str| u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).unwrap();
    let mut rows = Vec::new();
    let mut lines = text.lines().map(str::trim);
    while let Some(l) = lines.next() {
        if !l.contains("NT_STAPSDT") {
            continue;
        }
        let mut field = |label: &str| lines.next().unwrap().strip_prefix(label).unwrap().trim().to_string();
        let (provider, name, at, args) =
            (field("Provider:"), field("Name:"), field("Location:"), field("Arguments:"));
        // "0x…, Base: 0x…, Semaphore: 0x…"
        let parts: Vec<u64> = at.split(',').map(|p| hex(p.rsplit(':').next().unwrap())).collect();
        let shift = stapsdt_base.map_or(0, |b| b.wrapping_sub(parts[1]));
        let semaphore = if parts[2] == 0 { 0 } else { parts[2].wrapping_add(shift) };
        rows.push((provider, name, parts[0].wrapping_add(shift), semaphore, args));
    }
    rows.sort();
    rows
}

/// `phosphor probes --json FILE_OR_PID`, checked to succeed.
fn probes_json(test: &str, target: &str) -> Value {
    let out = phosphor(test, &["probes", "--json", target]);
    assert!(out.status.success(), "phosphor probes {target}: {}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("valid JSON")
}

/// The sites of one object of a `phosphor-probes/1` document: the live ones, and the
/// (provider, name, address) of the dead ones (code removed by the linker).
fn json_sites(object: &Value) -> (Vec<SiteRow>, Vec<(String, String, u64)>) {
    let text = |v: &Value| v.as_str().unwrap().to_string();
    let mut live = Vec::new();
    for p in object["probes"].as_array().unwrap() {
        for s in p["sites"].as_array().unwrap() {
            let semaphore = s["semaphore"].as_u64().unwrap_or(0);
            live.push((
                text(&p["provider"]),
                text(&p["name"]),
                s["address"].as_u64().unwrap(),
                semaphore,
                text(&s["args"]),
            ));
        }
    }
    live.sort();
    let dead = object["dead_sites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (text(&d["provider"]), text(&d["name"]), d["address"].as_u64().unwrap()))
        .collect();
    (live, dead)
}

#[test]
fn probes_lists_the_notes_readelf_reads_in_the_demo_and_in_system_programs() {
    let mut files: Vec<PathBuf> = vec![demo(false).into(), demo(true).into()];
    // Real-world notes: memory operands (`-4@112(%rsp)`), semaphores, other compilers.
    for system in ["/usr/bin/python3", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"] {
        if let Ok(p) = std::fs::canonicalize(system) {
            files.push(p);
        }
    }
    for file in &files {
        let json = probes_json("probes_vs_readelf", file.to_str().unwrap());
        let object = &json["objects"][0];
        let (live, dead) = json_sites(object);
        let (mut theirs, mut gone) = (Vec::new(), Vec::new());
        for row in readelf_sites(file, object["stapsdt_base"].as_u64()) {
            let key = (row.0.clone(), row.1.clone(), row.2);
            if dead.contains(&key) {
                gone.push(key);
            } else {
                theirs.push(row);
            }
        }
        assert_eq!(object["malformed_notes"], 0, "{}", file.display());
        assert_eq!(live, theirs, "{}: phosphor probes and readelf -n differ", file.display());
        assert_eq!(gone.len(), dead.len(), "{}: dead sites that readelf does not list", file.display());
    }
    let json = probes_json("probes_vs_readelf", demo(false).to_str().unwrap());
    let names: Vec<&str> = json["objects"][0]["probes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["all_types", "empty", "guarded", "hot", "inlined", "db_sql__query__select"]);
}

#[test]
fn the_table_counts_the_inlined_sites_of_a_probe_once() {
    let out = phosphor("probes_table", &["probes", demo(false).to_str().unwrap()]);
    let text = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    let first = text.lines().next().unwrap();
    assert!(first.ends_with(": 6 probes at 8 sites (ELF 64-bit LSB shared object or PIE)"), "{text}");
    let row = |name: &str| -> Vec<String> {
        let line = text.lines().find(|l| l.split_whitespace().nth(1) == Some(name)).expect(name);
        line.split_whitespace().map(String::from).collect()
    };
    let inlined = row("inlined");
    assert_eq!(
        (inlined[0].as_str(), inlined[2].as_str(), inlined[4].as_str(), inlined[5].as_str()),
        ("demo", "3", "-", "4@%rax")
    );
    let guarded = row("guarded");
    assert!(guarded[4].starts_with("0x000000000"), "a semaphore address: {guarded:?}");
    assert_eq!(row("all_types").len(), 5 + 12, "twelve argument specs");
    assert_eq!(row("empty")[5], "-", "no arguments");
}

/// A child process that is killed if the test fails before it ends.
struct Waiting(std::process::Child);

impl Drop for Waiting {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `usdt_demo wait` for `f`, which gets its pid; then lets it finish.
fn with_waiting_demo(f: impl FnOnce(u32)) {
    let mut child = Waiting(
        Command::new(demo(false))
            .arg("wait")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the demo starts"),
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    let pid: u32 = line.strip_prefix("ready ").expect("ready PID").trim().parse().unwrap();
    assert_eq!(pid, child.0.id());
    f(pid);
    child.0.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
    assert!(child.0.wait().unwrap().success(), "the demo ends well");
}

#[test]
fn a_process_shows_run_time_addresses_and_its_semaphores_at_zero() {
    with_waiting_demo(|pid| {
        let json = probes_json("probes_pid", &pid.to_string());
        assert_eq!(json["pid"], pid);
        let exe = std::fs::canonicalize(demo(false)).unwrap();
        let object = json["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["path"].as_str() == exe.to_str())
            .unwrap_or_else(|| panic!("{} is not listed: {json}", exe.display()));
        // A PIE's first segment is at 0: its first mapping is where it was loaded.
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
        let start =
            maps.lines().find(|l| l.ends_with(exe.to_str().unwrap())).unwrap().split('-').next().unwrap();
        let bias = u64::from_str_radix(start, 16).unwrap();
        assert_eq!(object["load_bias"].as_u64(), Some(bias));
        for p in object["probes"].as_array().unwrap() {
            for s in p["sites"].as_array().unwrap() {
                assert_eq!(s["runtime_address"].as_u64(), Some(s["address"].as_u64().unwrap() + bias));
                if p["name"] == "guarded" || p["name"] == "db_sql__query__select" {
                    assert_eq!(s["semaphore_value"], 0, "no tool is attached");
                    assert_eq!(
                        s["runtime_semaphore"].as_u64(),
                        Some(s["semaphore"].as_u64().unwrap() + bias)
                    );
                } else {
                    assert!(s["semaphore_value"].is_null(), "no semaphore: {s}");
                }
            }
        }

        let out = phosphor("probes_pid", &["probes", &pid.to_string()]);
        let text = stdout(&out);
        assert!(text.starts_with(&format!("process {pid}: ")), "{text}");
        assert!(text.contains(&format!("load bias {bias:#x}")), "{text}");
        assert!(text.contains("attached"), "{text}");
    });
}

#[test]
fn a_semaphore_gdb_incremented_shows_in_the_process_listing() {
    let dir = scratch("probes_gdb_semaphore_files");
    let report = dir.join("probes.json");
    let python = format!(
        "python import subprocess; open({report:?}, 'w').write(subprocess.run([{phosphor:?}, 'probes', \
         '--json', str(gdb.selected_inferior().pid)], capture_output=True, text=True).stdout)",
        phosphor = env!("CARGO_BIN_EXE_phosphor"),
    );
    // gdb takes its breakpoints out of the program while it is stopped (and the semaphore's count
    // with them) unless they are always inserted.
    let text = demo::gdb(
        demo(false),
        &["set breakpoint always-inserted on", "break -probe-stap demo:guarded", "run", &python, "continue"],
    );
    assert!(text.contains("enabled true"), "{text}");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).expect("the report");
    let guarded = json["objects"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|o| o["probes"].as_array().unwrap())
        .find(|p| p["name"] == "guarded")
        .expect("demo:guarded");
    assert_eq!(guarded["sites"][0]["semaphore_value"], 1, "gdb's breakpoint counts as one tool: {json}");
}

#[test]
fn a_file_without_probes_says_so_and_succeeds() {
    let me = env!("CARGO_BIN_EXE_phosphor");
    let out = phosphor("probes_none", &["probes", me]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{me}: no probes (ELF 64-bit LSB shared object or PIE)\n"));
    let json = probes_json("probes_none", me);
    assert_eq!(json["objects"][0]["probes"], serde_json::json!([]));
}

#[test]
fn a_file_that_is_not_elf_is_an_error_with_status_2() {
    let dir = scratch("probes_not_elf_files");
    std::fs::write(dir.join("text"), "hello\n").unwrap();
    std::fs::write(dir.join("empty"), "").unwrap();
    for (file, why) in [("text", "it starts with 68 65 6c 6c"), ("empty", "it is empty")] {
        let out = phosphor("probes_not_elf", &["probes", dir.join(file).to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains(&format!("{file}: not an ELF file ({why})")), "{}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"));
    }
    let out = phosphor("probes_not_elf", &["probes", "no-such-file"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no-such-file: cannot open"), "{}", stderr(&out));
    let out = phosphor("probes_not_elf", &["probes", "4000000000"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("is 4000000000 a running process?"), "{}", stderr(&out));
}

#[test]
fn a_truncated_elf_file_is_an_error_naming_the_file() {
    let dir = scratch("probes_truncated_files");
    let bytes = std::fs::read(demo(false)).unwrap();
    let cut = dir.join("cut");
    std::fs::write(&cut, &bytes[..4096]).unwrap();
    let out = phosphor("probes_truncated", &["probes", cut.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cut: a damaged ELF file"), "{}", stderr(&out));
}

/// The file range of section `name`, from `readelf -S -W`.
fn section_range(file: &Path, name: &str) -> std::ops::Range<usize> {
    let out = tool("readelf", &["-S", "-W", file.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.lines().find(|l| l.contains(&format!(" {name} "))).expect(name);
    let f: Vec<&str> = line.split_once(']').unwrap().1.split_whitespace().collect();
    let (offset, size) = (usize::from_str_radix(f[3], 16).unwrap(), usize::from_str_radix(f[4], 16).unwrap());
    offset..offset + size
}

#[test]
fn malformed_notes_are_skipped_and_counted() {
    let file = demo(false);
    let mut bytes = std::fs::read(file).unwrap();
    let section = section_range(file, ".note.stapsdt");
    // The notes: (offset of the header, offset of the descriptor, descriptor size, probe name).
    let mut notes = Vec::new();
    let mut at = section.start;
    let word = |b: &[u8], i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap()) as usize;
    while at < section.end {
        let (namesz, descsz) = (word(&bytes, at), word(&bytes, at + 4));
        let desc = at + 12 + namesz.next_multiple_of(4);
        let strings: Vec<&[u8]> = bytes[desc + 24..desc + descsz].split(|&b| b == 0).collect();
        notes.push((at, desc, descsz, String::from_utf8(strings[1].to_vec()).unwrap()));
        at = desc + descsz.next_multiple_of(4);
    }
    let find = |name: &str| notes.iter().find(|n| n.3 == name).unwrap().clone();
    // A bad argument spec; strings that run off the descriptor; another owner; and a last note
    // whose size runs off the section, which leaves nothing after it to read.
    let (_, desc, _, _) = find("all_types");
    let args = desc + 24 + "demo\0all_types\0".len();
    assert_eq!(bytes[args], b'-');
    bytes[args] = b'z';
    let (_, desc, descsz_g, _) = find("guarded");
    for b in &mut bytes[desc + 24..desc + descsz_g] {
        if *b == 0 {
            *b = b'x';
        }
    }
    let (header, _, _, _) = find("empty");
    bytes[header + 12 + 6] = b'X';
    let last = notes.last().unwrap().clone();
    assert!(!["all_types", "guarded", "empty"].contains(&last.3.as_str()));
    bytes[last.0 + 4..last.0 + 8].copy_from_slice(&0xffffu32.to_le_bytes());

    let dir = scratch("probes_malformed_files");
    let bad = dir.join("usdt_demo");
    std::fs::write(&bad, &bytes).unwrap();
    let json = probes_json("probes_malformed", bad.to_str().unwrap());
    let object = &json["objects"][0];
    assert_eq!(object["malformed_notes"], 4, "{json}");
    let left: Vec<u64> = json_sites(object).0.iter().map(|r| r.2).collect();
    let corrupt = [find("all_types").0, find("guarded").0, find("empty").0, last.0];
    let pc = |desc: usize| u64::from_le_bytes(bytes[desc..desc + 8].try_into().unwrap());
    let mut expected: Vec<u64> = notes.iter().filter(|n| !corrupt.contains(&n.0)).map(|n| pc(n.1)).collect();
    expected.sort();
    assert_eq!(left, expected, "the sites of the notes left whole");

    let out = phosphor("probes_malformed", &["probes", bad.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("skipped 4 malformed notes"), "{}", stdout(&out));
}

#[test]
fn random_damage_to_the_notes_never_panics() {
    let file = demo(false);
    let original = std::fs::read(file).unwrap();
    let section = section_range(file, ".note.stapsdt");
    let dir = scratch("probes_fuzz_files");
    // A fixed linear congruential sequence: the same damage every run.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as usize
    };
    let mut malformed = 0;
    for round in 0..40 {
        let mut bytes = original.clone();
        for _ in 0..1 + round % 8 {
            let at = section.start + next() % section.len();
            bytes[at] = next() as u8;
        }
        let bad = dir.join(format!("damaged-{round}"));
        std::fs::write(&bad, &bytes).unwrap();
        // Damage to the notes alone leaves a readable file: never an error.
        let json = probes_json("probes_fuzz", bad.to_str().unwrap());
        let object = &json["objects"][0];
        malformed += object["malformed_notes"].as_u64().unwrap();
        for p in object["probes"].as_array().unwrap() {
            for site in p["sites"].as_array().unwrap() {
                let specs = site["args"].as_str().unwrap().split_whitespace().count();
                assert_eq!(site["arguments"].as_array().unwrap().len(), specs, "round {round}: {site}");
            }
        }
    }
    assert!(malformed > 0, "the damage was noticed somewhere");
}
