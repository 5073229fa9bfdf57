//! The demo's notes as the system's `readelf` decodes them: the layout of SystemTap v3 notes, each
//! argument's size and signedness, `.stapsdt.base`, and the semaphore.

use std::path::Path;

use crate::demo::{demo, tool};

/// One `NT_STAPSDT` note as `readelf -n` prints it.
#[derive(Debug)]
struct Note {
    provider: String,
    name: String,
    location: u64,
    base: u64,
    semaphore: u64,
    args: String,
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

fn readelf(args: &[&str], file: &Path) -> String {
    let mut all = args.to_vec();
    all.push(file.to_str().unwrap());
    let out = tool("readelf", &all);
    assert!(out.status.success(), "readelf failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn notes(file: &Path) -> Vec<Note> {
    let text = readelf(&["-n"], file);
    let mut notes = Vec::new();
    let mut lines = text.lines().map(str::trim);
    while let Some(l) = lines.next() {
        if !l.contains("NT_STAPSDT") {
            continue;
        }
        let mut field = |label: &str| {
            let l = lines.next().unwrap_or_default();
            l.strip_prefix(label)
                .unwrap_or_else(|| panic!("{label:?} expected, got {l:?}"))
                .trim()
                .to_string()
        };
        let (provider, name) = (field("Provider:"), field("Name:"));
        let at = field("Location:");
        let args = field("Arguments:");
        let parts: Vec<&str> = at.split(',').collect();
        notes.push(Note {
            provider,
            name,
            location: hex(parts[0]),
            base: hex(parts[1].trim().trim_start_matches("Base:")),
            semaphore: hex(parts[2].trim().trim_start_matches("Semaphore:")),
            args,
        });
    }
    notes
}

/// The address range of section `name`, and its type and flags, from `readelf -S -W`.
fn section(file: &Path, name: &str) -> Option<(std::ops::Range<u64>, String)> {
    readelf(&["-S", "-W"], file).lines().find_map(|l| {
        let l = l.split_once(']').map_or(l, |(_, rest)| rest);
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.first() == Some(&name))
            .then(|| (hex(f[2])..hex(f[2]) + hex(f[4]), format!("{} {}", f[1], f.get(6).unwrap_or(&""))))
    })
}

fn sizes(args: &str) -> Vec<&str> {
    args.split_whitespace().map(|a| a.split('@').next().unwrap()).collect()
}

#[test]
fn every_argument_is_recorded_with_its_size_and_signedness() {
    for release in [false, true] {
        let notes = notes(demo(release));
        let find = |name: &str| notes.iter().find(|n| n.name == name).unwrap_or_else(|| panic!("{name}"));
        let all = find("all_types");
        assert_eq!(all.provider, "demo");
        // i8 i16 i32 i64 u8 u16 u32 u64 isize usize bool pointer
        assert_eq!(sizes(&all.args), ["-1", "-2", "-4", "-8", "1", "2", "4", "8", "-8", "8", "1", "8"]);
        assert!(all.args.split_whitespace().all(|a| a.contains("@%r")), "in 64-bit registers: {}", all.args);
        assert_eq!(find("empty").args, "");
        assert_eq!(sizes(&find("inlined").args), ["4"]);
        assert_eq!(sizes(&find("db_sql__query__select").args), ["4", "-8"]);
    }
}

#[test]
fn every_note_records_stapsdt_base_which_the_linker_kept() {
    for release in [false, true] {
        let file = demo(release);
        let (base, flags) = section(file, ".stapsdt.base").expect("a .stapsdt.base section");
        let base = base.start;
        assert!(base != 0 && flags.starts_with("PROGBITS A"), "{base:#x} {flags}");
        let notes = notes(file);
        assert!(notes.len() >= 8, "{notes:?}");
        for n in &notes {
            assert_eq!(n.base, base, "{n:?}");
            assert!(n.location != 0, "{n:?}");
        }
    }
}

#[test]
fn semaphores_are_u16s_in_section_probes_named_as_sys_sdt_h_names_them() {
    for release in [false, true] {
        let file = demo(release);
        let notes = notes(file);
        let guarded = notes.iter().find(|n| n.name == "guarded").unwrap();
        let bridge = notes.iter().find(|n| n.name == "db_sql__query__select").unwrap();
        let (probes, flags) = section(file, ".probes").expect("a .probes section");
        assert_eq!(flags, "PROGBITS WA", "initialised, writable data (uprobes find it by file offset)");
        assert_eq!(probes.end - probes.start, 4, "two u16 semaphores");
        assert!(probes.contains(&guarded.semaphore) && probes.contains(&bridge.semaphore));
        assert_ne!(guarded.semaphore, bridge.semaphore);
        let symbols = readelf(&["-s", "-W"], file);
        let symbol = symbols
            .lines()
            .find(|l| l.trim_end().ends_with(" demo_guarded_semaphore"))
            .unwrap_or_else(|| panic!("no demo_guarded_semaphore symbol"));
        let f: Vec<&str> = symbol.split_whitespace().collect();
        assert_eq!((hex(f[1]), f[2], f[3]), (guarded.semaphore, "2", "OBJECT"), "{symbol}");
        let others: Vec<&Note> =
            notes.iter().filter(|n| n.name != "guarded" && n.name != "db_sql__query__select").collect();
        assert!(others.len() >= 6 && others.iter().all(|n| n.semaphore == 0), "{others:?}");
    }
}
