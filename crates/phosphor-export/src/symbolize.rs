//! [`Symbolizer`]: the functions, files and lines of a traced process's instruction addresses, from
//! the mappings a trace recorded and the object files' debug information (`addr2line`).
//!
//! An address is found in its [`Mapping`] (where an object file was loaded); the file is opened
//! once per path and build id, and its GNU build id compared with the recorded one, so a binary
//! rebuilt since the trace is not taken for the one that ran. The address becomes a file offset
//! (`address − start + file offset`), then the object's own address (through the `PT_LOAD`
//! segment holding that offset), which is looked up with its inlined frames, innermost first,
//! demangled; the symbol table answers when there is no DWARF, only for an address inside a
//! symbol's size (a stripped library's exported symbols do not cover its local functions, and
//! the nearest one below is not the function). A return address is looked up at `address − 1`,
//! inside the call rather than after it.
//!
//! An object without debug information of its own (a distribution's stripped library) is read
//! from its separate debug file when one is installed under [`DEBUG_ROOT`] by its build id
//! (`.build-id/ab/cdef….debug`, checked to have the same build id), as gdb and perf do.
//!
//! What cannot be symbolized is named `file+0xOFFSET` (or `0xADDRESS` outside every mapping), and
//! why is said once per object ([`Symbolizer::warnings`]): a missing file, a build id that
//! differs, a file that is not a regular one.
//!
//! # Bounds
//!
//! A trace's mappings are input, so they may name anything: only regular files are opened (not a
//! FIFO, which would block, nor `/dev/zero`, nor a directory), at most [`MAX_OBJECT_BYTES`] each and
//! [`MAX_OBJECTS`] in all; object files are read through `addr2line`'s memory map, so a large
//! binary costs address space, not memory. The cache of symbolized addresses holds at most
//! [`MAX_CACHED_ADDRESSES`] and starts again when full.

use std::collections::HashMap;
use std::fs::File;
use std::sync::Arc;

use object::{Object, ObjectSegment, ReadCache};
use phosphor_format::system::Mapping;

/// The largest object file opened (4 GiB).
pub const MAX_OBJECT_BYTES: u64 = 4 << 30;
/// The most object files opened by one symbolizer.
pub const MAX_OBJECTS: usize = 1024;
/// The most addresses whose frames are kept.
pub const MAX_CACHED_ADDRESSES: usize = 1 << 18;
/// Where separate debug files are installed, by build id (`.build-id/ab/cdef….debug`: Debian's
/// `-dbg` and `-dbgsym` packages, Fedora's `debuginfo`), as gdb and perf look for them.
pub const DEBUG_ROOT: &str = "/usr/lib/debug";

/// One function frame of an address.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    /// The function, demangled; or `file+0xOFFSET` / `0xADDRESS` when it could not be found.
    pub function: String,
    /// The source file, when the debug information says.
    pub file: Option<String>,
    /// The source line, when the debug information says.
    pub line: Option<u32>,
    /// Whether the function was inlined into the next frame's.
    pub inlined: bool,
}

/// An object file, opened or refused.
enum Loaded {
    Open {
        loader: Box<addr2line::Loader>,
        segments: Vec<Segment>,
        /// Its function symbols with their sizes, read when an address first needs them.
        symbols: Option<Symbols>,
        /// Where its debug information and symbols are read: the file, or its separate debug
        /// file.
        debug_path: String,
    },
    Refused,
}

/// An object's function symbols (`.symtab`, else `.dynsym`) that have a size, by address.
struct Symbols {
    by_address: Vec<(u64, u64, Box<str>)>,
}

impl Symbols {
    fn read(path: &str) -> Symbols {
        use object::ObjectSymbol;
        let mut by_address = Vec::new();
        if let Ok(file) = File::open(path) {
            let cache = ReadCache::new(file);
            if let Ok(object) = object::File::parse(&cache) {
                let table = if object.symbols().next().is_some() {
                    object.symbols()
                } else {
                    object.dynamic_symbols()
                };
                by_address.extend(
                    table
                        .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 0 && !s.is_undefined())
                        .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.into()))),
                );
            }
        }
        by_address.sort_unstable_by_key(|s| (s.0, std::cmp::Reverse(s.1)));
        Symbols { by_address }
    }

    /// The symbol whose extent holds `address`.
    fn find(&self, address: u64) -> Option<&str> {
        let at = self.by_address.partition_point(|s| s.0 <= address);
        // The last few that start at or below: aliases and nested symbols start together.
        self.by_address[..at].iter().rev().take(8).find(|s| address - s.0 < s.1).map(|s| &*s.2)
    }
}

/// A `PT_LOAD` segment: its file range and its address in the object.
#[derive(Clone, Copy)]
struct Segment {
    offset: u64,
    size: u64,
    vaddr: u64,
}

/// Symbolizes addresses of one traced process (see the module's documentation).
pub struct Symbolizer {
    /// By start address.
    mappings: Vec<Mapping>,
    /// By (path, build id).
    objects: HashMap<(String, Vec<u8>), Loaded>,
    cache: HashMap<(u64, bool), Arc<[Frame]>>,
    warnings: Vec<String>,
    offline: bool,
    /// Where separate debug files are looked for (`/usr/lib/debug`).
    debug_root: std::path::PathBuf,
}

impl std::fmt::Debug for Symbolizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Symbolizer")
            .field("mappings", &self.mappings.len())
            .field("objects", &self.objects.len())
            .field("cached", &self.cache.len())
            .finish()
    }
}

impl Default for Symbolizer {
    fn default() -> Self {
        Symbolizer::new()
    }
}

impl Symbolizer {
    /// A symbolizer that reads object files.
    pub fn new() -> Symbolizer {
        Symbolizer {
            mappings: Vec::new(),
            objects: HashMap::new(),
            cache: HashMap::new(),
            warnings: Vec::new(),
            offline: false,
            debug_root: DEBUG_ROOT.into(),
        }
    }

    /// A symbolizer that opens no file: every address is named `file+0xOFFSET` (reproducible
    /// output, and no access to the files a trace names).
    pub fn offline() -> Symbolizer {
        Symbolizer { offline: true, ..Symbolizer::new() }
    }

    /// Adds mappings (a trace's system blocks bring them in turn). A later mapping over the same
    /// start replaces the earlier one.
    pub fn add_mappings(&mut self, mappings: &[Mapping]) {
        if mappings.is_empty() {
            return;
        }
        self.mappings.extend_from_slice(mappings);
        // Stable: of equal starts, the last added ends up last, and `dedup` keeps the first of a
        // run, so reverse first to keep the latest.
        self.mappings.reverse();
        self.mappings.sort_by_key(|m| m.start);
        self.mappings.dedup_by_key(|m| m.start);
        self.cache.clear();
    }

    /// Why objects could not be used, one line each, in the order found.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The frames of `address`, innermost (inlined) first; never empty. `return_address` says it
    /// is a caller's frame (every frame of a sample but the first), looked up at `address − 1`.
    pub fn frames(&mut self, address: u64, return_address: bool) -> Arc<[Frame]> {
        if let Some(f) = self.cache.get(&(address, return_address)) {
            return f.clone();
        }
        let frames: Arc<[Frame]> = self.lookup(address, return_address).into();
        if self.cache.len() >= MAX_CACHED_ADDRESSES {
            self.cache.clear();
        }
        self.cache.insert((address, return_address), frames.clone());
        frames
    }

    /// The innermost function of `address` (see [`Symbolizer::frames`]).
    pub fn function(&mut self, address: u64, return_address: bool) -> String {
        self.frames(address, return_address)[0].function.clone()
    }

    /// The function a stack's leaf (its first address) is in, the one the compiler made: the
    /// outermost of the address's inlined frames, as `perf report` names a sample (a sample in an
    /// inlined `Instant::now` inside `spin` names `spin`); `[no frames]` for an empty stack.
    pub fn leaf_function(&mut self, stack: &[u64]) -> String {
        match stack.first() {
            Some(&a) => {
                self.frames(a, false).last().map_or_else(|| format!("{a:#x}"), |f| f.function.clone())
            }
            None => "[no frames]".to_string(),
        }
    }

    /// A sampled stack's frames (addresses innermost first), each address with its frames
    /// innermost (inlined) first: `(place of the address in the stack, its frames)`. Every
    /// address but the first is a return address.
    pub fn stack_frames<'a>(
        &'a mut self,
        stack: &'a [u64],
    ) -> impl Iterator<Item = (usize, Arc<[Frame]>)> + 'a {
        stack.iter().enumerate().map(move |(i, &address)| (i, self.frames(address, i > 0)))
    }

    /// The path of the object file mapped at `address`, if a mapping holds it.
    pub fn module(&self, address: u64) -> Option<&str> {
        self.mapping(address).map(|m| m.path.as_str())
    }

    fn mapping(&self, address: u64) -> Option<&Mapping> {
        let at = self.mappings.partition_point(|m| m.start <= address);
        let m = self.mappings.get(at.checked_sub(1)?)?;
        (address < m.end).then_some(m)
    }

    fn lookup(&mut self, address: u64, return_address: bool) -> Vec<Frame> {
        let unknown = |function: String| vec![Frame { function, file: None, line: None, inlined: false }];
        let Some(m) = self.mapping(address).cloned() else {
            return unknown(format!("{address:#x}"));
        };
        let file_offset = (address - m.start).wrapping_add(m.file_offset);
        let fallback = || unknown(format!("{}+{file_offset:#x}", file_name(&m.path)));
        if self.offline {
            return fallback();
        }
        let key = (m.path.clone(), m.build_id.clone());
        if !self.objects.contains_key(&key) {
            let object = if self.objects.len() >= MAX_OBJECTS {
                Loaded::Refused
            } else {
                match open(&m, &self.debug_root) {
                    Ok(o) => o,
                    Err(why) => {
                        self.warnings.push(format!("{}: {why}; its addresses are shown as offsets", m.path));
                        Loaded::Refused
                    }
                }
            };
            self.objects.insert(key.clone(), object);
        }
        let Some(Loaded::Open { loader, segments, symbols, debug_path }) = self.objects.get_mut(&key) else {
            return fallback();
        };
        let Some(seg) = segments.iter().find(|s| file_offset.wrapping_sub(s.offset) < s.size) else {
            return fallback();
        };
        let svma = (file_offset - seg.offset).wrapping_add(seg.vaddr);
        let probe = if return_address { svma.wrapping_sub(1) } else { svma };
        let mut out = Vec::new();
        if let Ok(mut iter) = loader.find_frames(probe) {
            while let Ok(Some(f)) = iter.next() {
                let Some(function) = f.function.as_ref().and_then(|n| n.demangle().ok()) else { continue };
                let (file, line) = match &f.location {
                    Some(l) => (l.file.map(str::to_owned), l.line),
                    None => (None, None),
                };
                out.push(Frame { function: function.into_owned(), file, line, inlined: true });
            }
        }
        if out.is_empty() {
            if let Some(name) = symbols.get_or_insert_with(|| Symbols::read(debug_path)).find(probe) {
                let name = addr2line::demangle_auto(name.into(), None).into_owned();
                out.push(Frame { function: name, file: None, line: None, inlined: true });
            }
        }
        match out.last_mut() {
            Some(last) => last.inlined = false,
            None => return fallback(),
        }
        out
    }
}

/// The last component of a path.
fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Opens the object file of `m`: checks that it is a regular file of a sane size with the recorded
/// build id, reads its `PT_LOAD` segments, and loads its debug information (from its separate
/// debug file under `debug_root` when it has none of its own and one is installed).
fn open(m: &Mapping, debug_root: &std::path::Path) -> Result<Loaded, String> {
    if m.path.is_empty() || m.path.starts_with('[') {
        return Err("not a file (the kernel's own mapping)".into());
    }
    let meta = std::fs::metadata(&m.path).map_err(|e| format!("cannot open it ({e})"))?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > MAX_OBJECT_BYTES {
        return Err(format!("{} bytes is over the limit of {MAX_OBJECT_BYTES}", meta.len()));
    }
    let file = File::open(&m.path).map_err(|e| format!("cannot open it ({e})"))?;
    let cache = ReadCache::new(file);
    let object = object::File::parse(&cache).map_err(|e| format!("not an object file ({e})"))?;
    let build_id = object.build_id().ok().flatten().unwrap_or(&[]);
    if !m.build_id.is_empty() && build_id != m.build_id.as_slice() {
        return Err(format!(
            "its build id {} is not the traced one, {} (rebuilt since?)",
            hex(build_id),
            hex(&m.build_id)
        ));
    }
    let segments = object
        .segments()
        .map(|s| {
            let (offset, size) = s.file_range();
            Segment { offset, size, vaddr: s.address() }
        })
        .collect();
    let separate = match object.section_by_name(".debug_info") {
        None if !build_id.is_empty() => separate_debug_file(debug_root, build_id),
        _ => None,
    };
    let debug_path = separate.unwrap_or_else(|| m.path.clone());
    let loader = addr2line::Loader::new(&debug_path).map_err(|e| format!("no debug information ({e})"))?;
    Ok(Loaded::Open { loader: Box::new(loader), segments, symbols: None, debug_path })
}

/// The separate debug file of the object with `build_id` under `root`
/// (`root/.build-id/ab/cdef….debug`), if one is installed: a regular file of a sane size with
/// the same build id.
fn separate_debug_file(root: &std::path::Path, build_id: &[u8]) -> Option<String> {
    let (first, rest) = build_id.split_first()?;
    let path = root.join(".build-id").join(format!("{first:02x}")).join(format!("{}.debug", hex(rest)));
    let meta = std::fs::metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > MAX_OBJECT_BYTES {
        return None;
    }
    let cache = ReadCache::new(File::open(&path).ok()?);
    let object = object::File::parse(&cache).ok()?;
    (object.build_id().ok()?? == build_id).then(|| path.to_string_lossy().into_owned())
}

fn hex(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "(none)".into();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
#[path = "symbolize_tests.rs"]
mod tests;
