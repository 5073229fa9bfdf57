//! The process's executable mappings (Linux), for symbolizing samples: `/proc/self/maps`, read at
//! the start and again every few periods, and each object's GNU build id, read once per path.
//!
//! Only mappings not seen before are reported, so a trace holds each once. A mapping unmapped
//! between two reads and another mapped at the same place is reported again (same start, new
//! path or offset): the tools take the last one that covers an address at the sample's time as
//! good enough, as `perf` does without `MMAP2` records.

use std::collections::{HashMap, HashSet};

use phosphor_format::system::Mapping;

/// The mappings reported so far and the build ids read.
#[derive(Debug, Default)]
pub(super) struct Maps {
    seen: HashSet<(u64, u64, u64, String)>,
    build_ids: HashMap<String, Vec<u8>>,
}

impl Maps {
    /// The executable mappings that appeared since the last call (all of them the first time).
    /// An unreadable `/proc/self/maps` gives none.
    pub(super) fn new_mappings(&mut self) -> Vec<Mapping> {
        let Ok(text) = std::fs::read_to_string("/proc/self/maps") else { return Vec::new() };
        let mut out = Vec::new();
        for (start, end, file_offset, path) in text.lines().filter_map(parse_line) {
            if !self.seen.insert((start, end, file_offset, path.to_owned())) {
                continue;
            }
            let build_id = self.build_ids.entry(path.to_owned()).or_insert_with(|| build_id(path)).clone();
            out.push(Mapping { start, end, file_offset, path: path.to_owned(), build_id });
        }
        out
    }
}

/// An executable line of `/proc/self/maps`: `start-end perms offset dev inode [path]`; `None` for
/// the others and for anonymous executable memory (a JIT's), which no file describes.
fn parse_line(line: &str) -> Option<(u64, u64, u64, &str)> {
    let mut f = line.splitn(6, ' ');
    let (range, perms, offset) = (f.next()?, f.next()?, f.next()?);
    let path = f.nth(2)?.trim_start();
    if perms.as_bytes().get(2) != Some(&b'x') || path.is_empty() {
        return None;
    }
    let (start, end) = range.split_once('-')?;
    let hex = |s: &str| u64::from_str_radix(s, 16).ok();
    Some((hex(start)?, hex(end)?, hex(offset)?, path))
}

/// The GNU build id of the ELF file at `path`; empty when it has none or cannot be read. Reads
/// only the headers and the note, through `object`'s read cache, not the whole file.
fn build_id(path: &str) -> Vec<u8> {
    if !path.starts_with('/') {
        return Vec::new(); // [vdso] and the like
    }
    let Ok(file) = std::fs::File::open(path) else { return Vec::new() };
    let cache = object::ReadCache::new(file);
    let Ok(obj) = object::File::parse(&cache) else { return Vec::new() };
    use object::Object;
    obj.build_id().ok().flatten().map(<[u8]>::to_vec).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_executable_file_mappings_are_kept() {
        let x = "55d0c000-55d0d000 r-xp 00001000 08:01 1234                       /usr/bin/cat";
        assert_eq!(parse_line(x), Some((0x55d0c000, 0x55d0d000, 0x1000, "/usr/bin/cat")));
        let vdso = "7ffc1000-7ffc3000 r-xp 00000000 00:00 0                          [vdso]";
        assert_eq!(parse_line(vdso).map(|l| l.3), Some("[vdso]"));
        assert_eq!(parse_line("55d0c000-55d0d000 r--p 00000000 08:01 1234 /usr/bin/cat"), None);
        assert_eq!(parse_line("7f00000-7f01000 rwxp 00000000 00:00 0 "), None);
        assert_eq!(parse_line("garbage"), None);
    }

    #[test]
    fn the_test_binary_is_mapped_with_its_build_id_once() {
        let mut maps = Maps::default();
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let first = maps.new_mappings();
        let ours: Vec<_> = first.iter().filter(|m| std::path::Path::new(&m.path) == exe).collect();
        assert!(!ours.is_empty(), "{exe:?} not in {first:?}");
        // rustc's linker invocation asks for a build id on Linux.
        assert!(ours.iter().all(|m| m.build_id.len() >= 16), "{ours:?}");
        assert!(maps.new_mappings().iter().all(|m| std::path::Path::new(&m.path) != exe));
    }
}
