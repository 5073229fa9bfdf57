//! The symbolizer on this test binary's own code, and on mappings that must be refused.

use std::hint::black_box;

use object::{Object, ReadCache};
use phosphor_format::system::Mapping;

use super::Symbolizer;

#[inline(never)]
fn symbolize_me_please(x: u64) -> u64 {
    inlined_into_the_caller(black_box(x)).wrapping_add(black_box(3))
}

#[inline(always)]
fn inlined_into_the_caller(x: u64) -> u64 {
    black_box(x.wrapping_mul(0x9e37_79b9)) ^ black_box(x >> 7)
}

/// This process's executable mapping that holds `address`, with its file's build id.
fn own_mapping(address: u64) -> Mapping {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    for line in maps.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (start, end) = f[0].split_once('-').unwrap();
        let (start, end) = (u64::from_str_radix(start, 16).unwrap(), u64::from_str_radix(end, 16).unwrap());
        if (start..end).contains(&address) {
            let path = f[5].to_string();
            let file = std::fs::File::open(&path).unwrap();
            let cache = ReadCache::new(file);
            let build_id = object::File::parse(&cache).unwrap().build_id().unwrap().unwrap_or(&[]).to_vec();
            let file_offset = u64::from_str_radix(f[2], 16).unwrap();
            return Mapping { start, end, file_offset, path, build_id };
        }
    }
    panic!("no mapping holds {address:#x}");
}

#[test]
fn an_address_of_a_known_function_names_it_and_an_inlined_callee_shows_as_an_inlined_frame() {
    assert_eq!(symbolize_me_please(black_box(5)), symbolize_me_please(5));
    let start = symbolize_me_please as fn(u64) -> u64 as usize as u64;
    let mapping = own_mapping(start);
    assert!(!mapping.build_id.is_empty(), "rustc's linker writes a build id");
    let mut s = Symbolizer::new();
    s.add_mappings(&[mapping]);
    let first = s.frames(start, false);
    assert!(first[0].function.ends_with("symbolize_me_please"), "{first:?}");
    assert!(first[0].line.is_some() && first[0].file.as_deref().unwrap().ends_with("symbolize_tests.rs"));
    // Somewhere in the function's first bytes is the inlined callee's code: two frames, the
    // callee innermost and marked inlined.
    let inlined = (start..start + 400)
        .map(|a| s.frames(a, false))
        .find(|f| f.len() == 2 && f[0].function.ends_with("inlined_into_the_caller"));
    let inlined = inlined.expect("an address in the inlined callee");
    assert!(inlined[0].inlined && !inlined[1].inlined);
    assert!(inlined[1].function.ends_with("symbolize_me_please"), "{inlined:?}");
    assert!(s.warnings().is_empty(), "{:?}", s.warnings());
}

#[test]
fn a_return_address_is_looked_up_inside_the_call() {
    let start = symbolize_me_please as fn(u64) -> u64 as usize as u64;
    let mut s = Symbolizer::new();
    s.add_mappings(&[own_mapping(start)]);
    // The byte after a function's first instruction byte, as a return address, is that byte.
    assert_eq!(s.frames(start + 1, true), s.frames(start, false));
}

#[test]
fn a_rebuilt_binary_is_refused_once_with_its_build_ids_and_named_by_offset() {
    let start = symbolize_me_please as fn(u64) -> u64 as usize as u64;
    let mut m = own_mapping(start);
    m.build_id = vec![0xab; 20];
    let mut s = Symbolizer::new();
    s.add_mappings(&[m.clone()]);
    let name = s.function(start, false);
    let offset = start - m.start + m.file_offset;
    let file = m.path.rsplit('/').next().unwrap();
    assert_eq!(name, format!("{file}+{offset:#x}"));
    s.function(start + 8, false);
    assert_eq!(s.warnings().len(), 1, "{:?}", s.warnings());
    assert!(s.warnings()[0].contains("is not the traced one, abababab"), "{:?}", s.warnings());
}

#[test]
fn files_that_are_not_regular_or_missing_are_refused_without_being_read() {
    let dir = std::env::temp_dir().join(format!("phosphor-symbolize-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo");
    let _ = std::fs::remove_file(&fifo);
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let paths = [
        "/dev/zero".to_string(),
        dir.display().to_string(),
        fifo.display().to_string(),
        "/no/such/file".into(),
    ];
    let mappings: Vec<Mapping> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| Mapping {
            start: 0x1000_0000 * (i as u64 + 1),
            end: 0x1000_0000 * (i as u64 + 1) + 0x1000,
            file_offset: 0x200,
            path: p.clone(),
            build_id: vec![],
        })
        .collect();
    let mut s = Symbolizer::new();
    s.add_mappings(&mappings);
    for m in &mappings {
        let name = s.function(m.start + 0x10, false);
        assert_eq!(name, format!("{}+0x210", m.path.rsplit('/').next().unwrap()));
    }
    assert_eq!(s.function(0x5, false), "0x5", "outside every mapping");
    let w = s.warnings();
    assert_eq!(w.len(), 4, "{w:?}");
    assert!(w[..3].iter().all(|w| w.contains("not a regular file")), "{w:?}");
    assert!(w[3].contains("cannot open it"), "{w:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn offline_names_every_address_by_its_offset_and_opens_nothing() {
    let start = symbolize_me_please as fn(u64) -> u64 as usize as u64;
    let m = own_mapping(start);
    let mut s = Symbolizer::offline();
    s.add_mappings(std::slice::from_ref(&m));
    let file = m.path.rsplit('/').next().unwrap();
    assert_eq!(s.function(start, false), format!("{file}+{:#x}", start - m.start + m.file_offset));
    assert!(s.warnings().is_empty());
}

/// Issue 39, defect 13: in an object with no debug information (a distribution's stripped
/// `libc.so.6`, which has only its exported symbols), an address past the end of the symbol
/// below it is in a function the table does not name (`start_thread`, `clone3`), and is shown by
/// its offset rather than given that symbol's name.
#[test]
fn without_debug_information_an_address_past_a_symbols_end_is_not_given_its_name() {
    use object::{ObjectSegment, ObjectSymbol};
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let Some(line) = maps.lines().find(|l| l.contains(" r-xp ") && l.contains("/libc.so")) else {
        return eprintln!("no libc.so mapped here (a static build?): not checked");
    };
    let start = u64::from_str_radix(line.split('-').next().unwrap(), 16).unwrap();
    let m = own_mapping(start);
    let data = std::fs::read(&m.path).unwrap();
    let libc = object::File::parse(&*data).unwrap();
    if libc.section_by_name(".debug_info").is_some() || libc.symbols().next().is_some() {
        return eprintln!("{} is not stripped here: not checked", m.path);
    }
    let seg = libc
        .segments()
        .find(|s| {
            let (offset, size) = s.file_range();
            offset <= m.file_offset + (m.end - m.start) && m.file_offset < offset + size
        })
        .unwrap();
    let runtime = |svma: u64| m.start + (svma - seg.address() + seg.file_range().0) - m.file_offset;
    let mut syms: Vec<(u64, u64, String)> = libc
        .dynamic_symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 0)
        .map(|s| (s.address(), s.size(), s.name().unwrap().to_owned()))
        .filter(|s| (m.start..m.end).contains(&runtime(s.0)))
        .collect();
    syms.sort();
    // An exported function followed by at least 64 bytes that no exported symbol covers.
    let gap = syms.windows(2).find(|w| {
        let end = w[0].0 + w[0].1;
        w[1].0 > end + 64 && syms.iter().all(|s| !(s.0..s.0 + s.1).contains(&(end + 16)))
    });
    let [(addr, size, name), _] = gap.expect("a gap between exported functions") else { unreachable!() };
    let mut s = Symbolizer::new();
    // Not its separate debug file, if one is installed here: the symbol table is under test.
    s.debug_root = std::env::temp_dir().join("phosphor-no-debug-files");
    s.add_mappings(std::slice::from_ref(&m));
    let inside = s.function(runtime(*addr + 1), false);
    let aliases: Vec<&str> = syms.iter().filter(|s| s.0 == *addr).map(|s| s.2.as_str()).collect();
    assert!(aliases.contains(&inside.as_str()), "{inside} for an address in {aliases:?}");
    let past = runtime(addr + size + 16);
    let file = m.path.rsplit('/').next().unwrap();
    assert_eq!(
        s.function(past, false),
        format!("{file}+{:#x}", past - m.start + m.file_offset),
        "past {name}"
    );
}

/// A stripped object (no DWARF, no symbol table) is named from its separate debug file, found
/// under the debug root by its build id, as a distribution's `-dbg` package installs it.
#[test]
fn a_stripped_objects_separate_debug_file_is_found_by_its_build_id() {
    let start = symbolize_me_please as fn(u64) -> u64 as usize as u64;
    let own = own_mapping(start);
    let dir = std::env::temp_dir().join(format!("phosphor-debug-file-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let id = super::hex(&own.build_id);
    let debug = dir.join(".build-id").join(&id[..2]).join(format!("{}.debug", &id[2..]));
    std::fs::create_dir_all(debug.parent().unwrap()).unwrap();
    let stripped = dir.join("stripped");
    let objcopy = |args: &[&std::ffi::OsStr]| std::process::Command::new("objcopy").args(args).status();
    let made = objcopy(&["--only-keep-debug".as_ref(), own.path.as_ref(), debug.as_os_str()]).and_then(|a| {
        Ok(a.success()
            && objcopy(&["--strip-all".as_ref(), own.path.as_ref(), stripped.as_os_str()])?.success())
    });
    if !matches!(made, Ok(true)) {
        let _ = std::fs::remove_dir_all(&dir);
        return eprintln!("objcopy (binutils) could not make the files here ({made:?}): not checked");
    }
    let m = Mapping { path: stripped.display().to_string(), ..own.clone() };
    let mut without = Symbolizer::new();
    without.debug_root = dir.join("elsewhere");
    without.add_mappings(std::slice::from_ref(&m));
    let raw = without.function(start, false);
    assert_eq!(raw, format!("stripped+{:#x}", start - m.start + m.file_offset), "the stripped file alone");
    let mut with = Symbolizer::new();
    with.debug_root = dir.clone();
    with.add_mappings(std::slice::from_ref(&m));
    let frames = with.frames(start, false);
    assert!(frames[0].function.ends_with("symbolize_me_please"), "{frames:?}");
    assert!(frames[0].file.as_deref().is_some_and(|f| f.ends_with("symbolize_tests.rs")), "{frames:?}");
    assert!(with.warnings().is_empty(), "{:?}", with.warnings());
    std::fs::remove_dir_all(&dir).unwrap();
}
