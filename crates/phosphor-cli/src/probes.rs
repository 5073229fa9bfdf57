//! `phosphor probes BINARY_OR_PID [--json]`: the USDT probes of an ELF file, or of every ELF
//! object a running process has mapped.
//!
//! A probe is a SystemTap v3 note (`NT_STAPSDT`, type 3, owner `stapsdt`) in a section named
//! `.note.stapsdt`: the probe's address, the link-time address of `_.stapsdt.base`, the
//! semaphore's address (or 0), then provider, name and argument specs as NUL-terminated strings
//! (`phosphor_usdt`'s `site.rs` describes the layout). The ELF is read with the `object` crate,
//! lazily (`ReadCache`): only the headers and the note sections, so a large library costs little.
//!
//! Addresses are corrected for prelink as the tools do: by the difference between the address of
//! the section `.stapsdt.base` and the base the note recorded. For a process, each object's load
//! bias comes from `/proc/PID/maps` (the mapping of one of its `PT_LOAD` segments), which gives
//! run-time addresses; the current value of each semaphore (how many tools are attached) is read
//! from `/proc/PID/mem` when the kernel allows it.
//!
//! Sites of the same `provider:name` in one object (copies made by inlining or unrolling) are
//! grouped, with a count. A site whose address lies outside every executable segment belongs to a
//! function the linker removed (`--gc-sections` keeps the note, not the code): it is reported
//! apart. A note that cannot be decoded is skipped and counted.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use anyhow::Context as _;
use clap::Args;
use object::elf;
use object::read::elf::{FileHeader, ProgramHeader as _, SectionHeader as _};
use object::{Endianness, FileKind, ReadCache, ReadRef};

/// Options of `phosphor probes`.
#[derive(Debug, Args)]
pub struct ProbesArgs {
    /// An ELF file (program, shared library or object file), or the id of a running process (a
    /// number names a process unless a file of that name exists).
    target: String,
    /// Print JSON (`phosphor-probes/1`) with every site of every probe.
    #[arg(long)]
    json: bool,
}

/// One argument of a probe, from its spec `SIZE@LOCATION` (`-4@%eax`, `8@-16(%rbp)`).
#[derive(Debug, Clone, PartialEq)]
struct ArgSpec {
    /// Size in bytes.
    size: u8,
    signed: bool,
    /// A floating-point value (`8f@%xmm0`, newer `sys/sdt.h`).
    float: bool,
    location: String,
}

/// One probe site: one note.
#[derive(Debug)]
struct Site {
    /// The address of the probe's `nop`, corrected for prelink.
    address: u64,
    /// The semaphore's address, corrected for prelink; `None` when the probe has none.
    semaphore: Option<u64>,
    /// The argument specs as the note has them.
    args_text: String,
    args: Vec<ArgSpec>,
}

/// The probes of one ELF object.
#[derive(Debug, Default)]
struct ObjectProbes {
    path: String,
    /// `ELF 64-bit LSB executable`, and so on.
    kind: String,
    /// Width of an address in hex digits (16 for ELF64, 8 for ELF32).
    width: usize,
    /// Sites by provider and name.
    probes: BTreeMap<(String, String), Vec<Site>>,
    /// Sites outside every executable segment: their code was removed by the linker.
    dead: Vec<(String, String, u64)>,
    /// Notes skipped because they could not be decoded.
    malformed: u64,
    /// The address of `.stapsdt.base`, if the file has that section (gdb ignores the probes of a
    /// file without it).
    stapsdt_base: Option<u64>,
    /// A relocatable object: addresses are section offsets, before relocation.
    relocatable: bool,
    /// In a process: what to add to a file address to get a run-time one.
    load_bias: Option<u64>,
    /// In a process: the value of each semaphore by (file) address, where it could be read.
    semaphore_values: BTreeMap<u64, u16>,
}

impl ObjectProbes {
    fn site_count(&self) -> usize {
        self.probes.values().map(Vec::len).sum()
    }
}

/// Runs `phosphor probes` and writes its report to `out`.
pub fn run(args: &ProbesArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let as_file = Path::new(&args.target);
    match args.target.parse::<u32>() {
        Ok(pid) if !as_file.exists() => {
            let objects = read_process(pid)?;
            if args.json {
                write_json(Some(pid), &objects, out)?;
            } else {
                print_process(pid, &objects, out)?;
            }
        }
        _ => {
            let path = &args.target;
            let file = File::open(as_file).with_context(|| format!("{path}: cannot open"))?;
            if file.metadata().is_ok_and(|m| m.is_dir()) {
                anyhow::bail!("{path}: a directory, not an ELF file");
            }
            let object = read_object(ReadCache::new(file), path, &[])?;
            if args.json {
                write_json(None, &[Ok(object)], out)?;
            } else {
                print_object(&object, out)?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// Reads the probes of the ELF file behind `cache`; an error if it is not an ELF file. `maps` are
/// the file's mappings in a process, from which its load bias follows (none for a file alone).
fn read_object(cache: ReadCache<File>, path: &str, maps: &[&Mapping]) -> anyhow::Result<ObjectProbes> {
    let data = &cache;
    let object = match FileKind::parse(data) {
        Ok(FileKind::Elf32) => read_elf::<elf::FileHeader32<Endianness>>(data, path, maps),
        Ok(FileKind::Elf64) => read_elf::<elf::FileHeader64<Endianness>>(data, path, maps),
        _ => {
            let len = data.len().unwrap_or(0);
            let head = data.read_bytes_at(0, len.min(4)).unwrap_or(&[]);
            let head: Vec<String> = head.iter().map(|b| format!("{b:02x}")).collect();
            let what = if head.is_empty() {
                "it is empty".to_string()
            } else {
                format!("it starts with {}", head.join(" "))
            };
            anyhow::bail!("{path}: not an ELF file ({what})");
        }
    };
    object.with_context(|| format!("{path}: a damaged ELF file"))
}

fn read_elf<Elf: FileHeader<Endian = Endianness>>(
    data: &ReadCache<File>,
    path: &str,
    maps: &[&Mapping],
) -> Result<ObjectProbes, object::read::Error> {
    let header = Elf::parse(data)?;
    let endian = header.endian()?;
    let is_64 = header.is_type_64();
    let mut o = ObjectProbes {
        path: path.to_string(),
        kind: elf_kind(header.e_ident(), header.e_type(endian), is_64),
        width: if is_64 { 16 } else { 8 },
        relocatable: header.e_type(endian) == elf::ET_REL,
        ..ObjectProbes::default()
    };
    let sections = header.sections(endian, data)?;
    o.stapsdt_base =
        sections.section_by_name(endian, b".stapsdt.base").map(|(_, s)| s.sh_addr(endian).into());
    let segments = header.program_headers(endian, data)?;
    let loads = segments.iter().filter(|p| p.p_type(endian) == elf::PT_LOAD);
    // Executable ranges: a site outside all of them has lost its code. An object file has none.
    let code: Vec<(u64, u64)> = loads
        .clone()
        .filter(|p| p.p_flags(endian) & elf::PF_X != 0)
        .map(|p| {
            let start: u64 = p.p_vaddr(endian).into();
            (start, start.saturating_add(p.p_memsz(endian).into()))
        })
        .collect();
    // The load bias: the first page of a PT_LOAD segment is mapped at the mapping of its offset.
    const PAGE: u64 = 4096;
    o.load_bias = loads.clone().find_map(|p| {
        let (offset, vaddr): (u64, u64) = (p.p_offset(endian).into(), p.p_vaddr(endian).into());
        let m = maps.iter().find(|m| m.offset == offset & !(PAGE - 1))?;
        Some(m.start.wrapping_sub(vaddr & !(PAGE - 1)))
    });

    for section in sections.iter() {
        if sections.section_name(endian, section) != Ok(b".note.stapsdt") {
            continue;
        }
        let mut notes = match section.notes(endian, data) {
            Ok(Some(notes)) => notes,
            // Not of type SHT_NOTE: not a note section whatever its name.
            Ok(None) => continue,
            // Its data is out of the file, or its alignment is not 4 or 8: none of it can be read.
            Err(_) => {
                o.malformed += 1;
                continue;
            }
        };
        loop {
            let note = match notes.next() {
                Ok(Some(note)) => note,
                Ok(None) => break,
                // The rest of the section cannot be framed into notes.
                Err(_) => {
                    o.malformed += 1;
                    break;
                }
            };
            if note.name() != b"stapsdt" || note.n_type(endian) != 3 {
                o.malformed += 1;
                continue;
            }
            let Some(raw) = decode_note(note.desc(), is_64, endian) else {
                o.malformed += 1;
                continue;
            };
            // Prelink moves the code but not the notes; `.stapsdt.base` moves with the code.
            let shift = o.stapsdt_base.map_or(0, |b| b.wrapping_sub(raw.base));
            let address = raw.pc.wrapping_add(shift);
            let key = (raw.provider, raw.name);
            if !code.is_empty() && !code.iter().any(|&(lo, hi)| (lo..hi).contains(&address)) {
                o.dead.push((key.0, key.1, address));
                continue;
            }
            let semaphore = (raw.semaphore != 0).then(|| raw.semaphore.wrapping_add(shift));
            let site = Site { address, semaphore, args_text: raw.args_text, args: raw.args };
            o.probes.entry(key).or_default().push(site);
        }
    }
    for sites in o.probes.values_mut() {
        sites.sort_by_key(|s| s.address);
    }
    Ok(o)
}

/// What one note holds, before the prelink correction.
#[derive(Debug)]
struct RawNote {
    pc: u64,
    base: u64,
    semaphore: u64,
    provider: String,
    name: String,
    args_text: String,
    args: Vec<ArgSpec>,
}

/// Decodes the descriptor of an `NT_STAPSDT` note; `None` if it is malformed: too short, strings
/// that are not NUL-terminated inside it or not printable, an empty provider or name, or an
/// argument spec that does not parse.
fn decode_note(desc: &[u8], is_64: bool, endian: Endianness) -> Option<RawNote> {
    use object::Endian as _;
    let word = if is_64 { 8 } else { 4 };
    let addr = |i: usize| -> Option<u64> {
        let b = desc.get(i * word..(i + 1) * word)?;
        Some(if is_64 {
            endian.read_u64_bytes(b.try_into().ok()?)
        } else {
            u64::from(endian.read_u32_bytes(b.try_into().ok()?))
        })
    };
    let (pc, base, semaphore) = (addr(0)?, addr(1)?, addr(2)?);
    let mut strings = desc[3 * word..].split(|&b| b == 0);
    let mut text = || -> Option<String> {
        let s = std::str::from_utf8(strings.next()?).ok()?;
        s.chars().all(|c| c.is_ascii_graphic() || c == ' ').then(|| s.to_string())
    };
    let (provider, name, args_text) = (text()?, text()?, text()?);
    // The split yields a last piece after the third NUL (padding, or nothing); without that NUL
    // the args string ran off the end of the descriptor.
    strings.next()?;
    if provider.is_empty() || name.is_empty() {
        return None;
    }
    let args = args_text.split_whitespace().map(parse_arg).collect::<Option<Vec<_>>>()?;
    Some(RawNote { pc, base, semaphore, provider, name, args_text, args })
}

/// Parses one argument spec, `[-]SIZE[f]@LOCATION`.
fn parse_arg(spec: &str) -> Option<ArgSpec> {
    let (size, location) = spec.split_once('@')?;
    let (signed, size) = match size.strip_prefix('-') {
        Some(s) => (true, s),
        None => (false, size),
    };
    let (float, size) = match size.strip_suffix('f') {
        Some(s) => (true, s),
        None => (false, size),
    };
    let size: u8 = size.parse().ok()?;
    if ![1, 2, 4, 8, 16].contains(&size) || location.is_empty() {
        return None;
    }
    Some(ArgSpec { size, signed, float, location: location.to_string() })
}

/// `ELF 64-bit LSB shared object`, from the identification bytes and the type.
fn elf_kind(ident: &elf::Ident, e_type: u16, is_64: bool) -> String {
    let order = if ident.data == elf::ELFDATA2MSB { "MSB" } else { "LSB" };
    let what = match e_type {
        elf::ET_REL => "relocatable object",
        elf::ET_EXEC => "executable",
        elf::ET_DYN => "shared object or PIE",
        elf::ET_CORE => "core file",
        _ => "file of unknown type",
    };
    format!("ELF {}-bit {order} {what}", if is_64 { 64 } else { 32 })
}

/// One line of `/proc/PID/maps` that maps a file.
#[derive(Debug, PartialEq)]
struct Mapping {
    start: u64,
    offset: u64,
    path: String,
}

/// The file mappings of `/proc/PID/maps` (anonymous and special ones, `[heap]`, are left out).
fn parse_maps(text: &str) -> Vec<Mapping> {
    let mut maps = Vec::new();
    for line in text.lines() {
        // start-end perms offset dev inode path, the path possibly with spaces.
        let mut rest = line;
        let mut fields = [""; 5];
        for f in &mut fields {
            rest = rest.trim_start();
            let end = rest.find(' ').unwrap_or(rest.len());
            (*f, rest) = rest.split_at(end);
        }
        let path = rest.trim();
        if !path.starts_with('/') {
            continue;
        }
        let (Some((start, _)), Ok(offset)) = (fields[0].split_once('-'), u64::from_str_radix(fields[2], 16))
        else {
            continue;
        };
        let Ok(start) = u64::from_str_radix(start, 16) else { continue };
        maps.push(Mapping { start, offset, path: path.to_string() });
    }
    maps
}

/// The probes of every ELF object process `pid` has mapped, in the order of the maps; an object
/// that cannot be read gives its error.
fn read_process(pid: u32) -> anyhow::Result<Vec<anyhow::Result<ObjectProbes>>> {
    let maps_path = format!("/proc/{pid}/maps");
    let text = std::fs::read_to_string(&maps_path)
        .with_context(|| format!("{maps_path}: cannot read (is {pid} a running process?)"))?;
    let maps = parse_maps(&text);
    let mut paths: Vec<&str> = Vec::new();
    for m in &maps {
        if !paths.contains(&m.path.as_str()) {
            paths.push(&m.path);
        }
    }
    let mut mem = File::open(format!("/proc/{pid}/mem")).ok();
    let mut objects = Vec::new();
    for path in paths {
        // The process may live in another mount namespace: its root shows its files.
        let Some(file) = [path.to_string(), format!("/proc/{pid}/root{path}")]
            .iter()
            .find_map(|p| File::open(p).ok().filter(is_elf))
        else {
            continue;
        };
        let mine: Vec<&Mapping> = maps.iter().filter(|m| m.path == path).collect();
        let object = read_object(ReadCache::new(file), path, &mine).map(|mut o| {
            if let (Some(bias), Some(mem)) = (o.load_bias, mem.as_mut()) {
                let semaphores = o.probes.values().flatten().filter_map(|s| s.semaphore);
                for sem in semaphores.collect::<Vec<_>>() {
                    if let Some(v) = read_u16(mem, sem.wrapping_add(bias)) {
                        o.semaphore_values.insert(sem, v);
                    }
                }
            }
            o
        });
        objects.push(object);
    }
    Ok(objects)
}

/// Whether `f` starts with the ELF magic (mapped files are often not ELF: locale archives, fonts).
fn is_elf(mut f: &File) -> bool {
    let mut magic = [0u8; 4];
    let ok = f.read_exact(&mut magic).is_ok() && magic == *b"\x7fELF";
    ok && f.seek(SeekFrom::Start(0)).is_ok()
}

/// A `u16` of another process's memory, through `/proc/PID/mem`.
fn read_u16(mem: &mut File, address: u64) -> Option<u16> {
    let mut b = [0u8; 2];
    mem.seek(SeekFrom::Start(address)).ok()?;
    mem.read_exact(&mut b).ok()?;
    Some(u16::from_ne_bytes(b))
}

fn print_process(
    pid: u32,
    objects: &[anyhow::Result<ObjectProbes>],
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let with = objects.iter().filter(|o| o.as_ref().is_ok_and(|o| !o.probes.is_empty())).count();
    writeln!(out, "process {pid}: {with} of {} mapped ELF objects have probes", objects.len())?;
    for object in objects {
        match object {
            Ok(o) if o.probes.is_empty() && o.dead.is_empty() && o.malformed == 0 => {}
            Ok(o) => {
                writeln!(out)?;
                print_object(o, out)?;
            }
            Err(e) => writeln!(out, "\n{e:#}")?,
        }
    }
    Ok(())
}

fn print_object(o: &ObjectProbes, out: &mut impl Write) -> anyhow::Result<()> {
    let bias = o.load_bias.map(|b| format!(", load bias {b:#x}")).unwrap_or_default();
    if o.probes.is_empty() {
        writeln!(out, "{}: no probes ({}{bias})", o.path, o.kind)?;
    } else {
        writeln!(
            out,
            "{}: {} at {} ({}{bias})",
            o.path,
            plural(o.probes.len(), "probe"),
            plural(o.site_count(), "site"),
            o.kind
        )?;
        let w = o.width + 2;
        let pw = o.probes.keys().map(|(p, _)| p.len()).max().unwrap_or(0).max("provider".len());
        let nw = o.probes.keys().map(|(_, n)| n.len()).max().unwrap_or(0).max("name".len());
        let in_process = o.load_bias.is_some();
        let attached = if in_process { "  attached" } else { "" };
        writeln!(
            out,
            "  {:<pw$}  {:<nw$}  {:>5}  {:<w$}  {:<w$}{attached}  arguments",
            "provider", "name", "sites", "address", "semaphore"
        )?;
        for ((provider, name), sites) in &o.probes {
            let first = &sites[0];
            let at = |a: u64| format!("{:#0w$x}", a.wrapping_add(o.load_bias.unwrap_or(0)));
            let semaphore = match first.semaphore {
                Some(s) if sites.iter().all(|x| x.semaphore == first.semaphore) => at(s),
                Some(_) => "(differs)".to_string(),
                None => "-".to_string(),
            };
            let attached = match (in_process, first.semaphore) {
                (false, _) => String::new(),
                (true, Some(s)) => match o.semaphore_values.get(&s) {
                    Some(v) => format!("  {v:>8}"),
                    None => format!("  {:>8}", "?"),
                },
                (true, None) => format!("  {:>8}", "-"),
            };
            let args = if first.args_text.is_empty() { "-" } else { &first.args_text };
            writeln!(
                out,
                "  {provider:<pw$}  {name:<nw$}  {:>5}  {:<w$}  {semaphore:<w$}{attached}  {args}",
                sites.len(),
                at(first.address)
            )?;
        }
        if o.probes.values().any(|s| s.len() > 1) {
            writeln!(out, "  (a probe with several sites shows its first; --json lists them all)")?;
        }
    }
    if !o.dead.is_empty() {
        let mut names: Vec<String> = o.dead.iter().map(|(p, n, _)| format!("{p}:{n}")).collect();
        names.dedup();
        writeln!(
            out,
            "  {} whose code the linker removed (outside every code segment): {}",
            plural(o.dead.len(), "site"),
            names.join(", ")
        )?;
    }
    if o.malformed > 0 {
        writeln!(out, "  skipped {}", plural(o.malformed as usize, "malformed note"))?;
    }
    if o.stapsdt_base.is_none() && !o.probes.is_empty() && !o.relocatable {
        writeln!(out, "  no .stapsdt.base section: gdb ignores the probes of this file")?;
    }
    if o.relocatable && !o.probes.is_empty() {
        writeln!(out, "  a relocatable object: addresses are offsets in their sections, before relocation")?;
    }
    Ok(())
}

/// `1 probe`, `2 probes`.
fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// The `phosphor-probes/1` JSON document: one entry an object, an error in place of an object that
/// could not be read.
fn write_json(
    pid: Option<u32>,
    objects: &[anyhow::Result<ObjectProbes>],
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let mut s = String::new();
    write!(s, "{{\"format\":\"phosphor-probes/1\",\"pid\":{},\"objects\":[", json_opt(pid.map(u64::from)))?;
    for (i, object) in objects.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        match object {
            Ok(o) => json_object(&mut s, o)?,
            Err(e) => write!(s, "{{\"error\":{}}}", json_str(&format!("{e:#}")))?,
        }
    }
    s.push_str("]}\n");
    out.write_all(s.as_bytes())?;
    Ok(())
}

/// One object: its addresses, its probes with their sites, and the sites of dead code.
fn json_object(s: &mut String, o: &ObjectProbes) -> std::fmt::Result {
    write!(s, "{{\"path\":{},\"kind\":{},", json_str(&o.path), json_str(&o.kind))?;
    write!(
        s,
        "\"stapsdt_base\":{},\"load_bias\":{},\"malformed_notes\":{},\"probes\":[",
        json_opt(o.stapsdt_base),
        json_opt(o.load_bias),
        o.malformed
    )?;
    for (j, ((provider, name), sites)) in o.probes.iter().enumerate() {
        if j > 0 {
            s.push(',');
        }
        write!(s, "{{\"provider\":{},\"name\":{},\"sites\":[", json_str(provider), json_str(name))?;
        for (k, site) in sites.iter().enumerate() {
            if k > 0 {
                s.push(',');
            }
            json_site(s, o, site)?;
        }
        s.push_str("]}");
    }
    s.push_str("],\"dead_sites\":[");
    for (j, (provider, name, address)) in o.dead.iter().enumerate() {
        if j > 0 {
            s.push(',');
        }
        write!(
            s,
            "{{\"provider\":{},\"name\":{},\"address\":{address}}}",
            json_str(provider),
            json_str(name)
        )?;
    }
    s.push_str("]}");
    Ok(())
}

/// One probe site of object `o`: its file addresses, their runtime addresses when the load bias is
/// known, the semaphore's value when it was read, and the argument specs.
fn json_site(s: &mut String, o: &ObjectProbes, site: &Site) -> std::fmt::Result {
    let runtime = |a: u64| o.load_bias.map(|b| a.wrapping_add(b));
    write!(
        s,
        "{{\"address\":{},\"semaphore\":{},\"runtime_address\":{},\"runtime_semaphore\":{},",
        site.address,
        json_opt(site.semaphore),
        json_opt(runtime(site.address)),
        json_opt(site.semaphore.and_then(runtime)),
    )?;
    write!(
        s,
        "\"semaphore_value\":{},\"args\":{},\"arguments\":[",
        json_opt(site.semaphore.and_then(|a| o.semaphore_values.get(&a)).map(|&v| u64::from(v))),
        json_str(&site.args_text)
    )?;
    for (l, a) in site.args.iter().enumerate() {
        if l > 0 {
            s.push(',');
        }
        write!(
            s,
            "{{\"size\":{},\"signed\":{},\"float\":{},\"location\":{}}}",
            a.size,
            a.signed,
            a.float,
            json_str(&a.location)
        )?;
    }
    s.push_str("]}");
    Ok(())
}

/// A number, or `null`.
fn json_opt(v: Option<u64>) -> String {
    v.map_or("null".to_string(), |v| v.to_string())
}

/// A JSON string literal.
fn json_str(v: &str) -> String {
    let mut s = String::with_capacity(v.len() + 2);
    s.push('"');
    for c in v.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(pc: u64, base: u64, sem: u64, strings: &[u8]) -> Vec<u8> {
        let mut d = Vec::new();
        for w in [pc, base, sem] {
            d.extend_from_slice(&w.to_le_bytes());
        }
        d.extend_from_slice(strings);
        d
    }

    #[test]
    fn a_note_gives_its_addresses_strings_and_argument_specs() {
        let d = desc(0x1000, 0x2000, 0x3000, b"demo\0all\0-4@%eax 8@-16(%rbp) 8f@%xmm0\0\0\0");
        let n = decode_note(&d, true, Endianness::Little).unwrap();
        assert_eq!((n.pc, n.base, n.semaphore), (0x1000, 0x2000, 0x3000));
        assert_eq!((n.provider.as_str(), n.name.as_str()), ("demo", "all"));
        assert_eq!(n.args_text, "-4@%eax 8@-16(%rbp) 8f@%xmm0");
        let spec = |size, signed, float, loc: &str| ArgSpec { size, signed, float, location: loc.into() };
        assert_eq!(
            n.args,
            [spec(4, true, false, "%eax"), spec(8, false, false, "-16(%rbp)"), spec(8, false, true, "%xmm0")]
        );
        let none = decode_note(&desc(1, 2, 0, b"p\0n\0\0"), true, Endianness::Little).unwrap();
        assert!(none.args.is_empty());
    }

    #[test]
    fn a_32_bit_note_has_4_byte_addresses() {
        let mut d = Vec::new();
        for w in [0x10u32, 0x20, 0] {
            d.extend_from_slice(&w.to_be_bytes());
        }
        d.extend_from_slice(b"p\0n\0-4@%r3\0");
        let n = decode_note(&d, false, Endianness::Big).unwrap();
        assert_eq!((n.pc, n.base, n.semaphore), (0x10, 0x20, 0));
    }

    #[test]
    fn malformed_notes_are_refused() {
        let bad: [&[u8]; 7] = [
            b"p\0n\0-4@%eax",   // the args string is not terminated
            b"p\0n\0",          // no args string at all
            b"\0n\0\0",         // empty provider
            b"p\0\0\0",         // empty name
            b"p\0n\x01\0\0",    // control character
            b"p\0n\0-3@%eax\0", // no such size
            b"p\0n\0-4%eax\0",  // no @
        ];
        for strings in bad {
            assert!(decode_note(&desc(1, 2, 3, strings), true, Endianness::Little).is_none(), "{strings:?}");
        }
        assert!(decode_note(&[0; 20], true, Endianness::Little).is_none(), "shorter than three words");
    }

    #[test]
    fn maps_lines_give_file_mappings_only() {
        let text = "\
555555554000-555555560000 r--p 00000000 08:01 123                        /usr/bin/my prog
555555560000-555555570000 r-xp 0000c000 08:01 123                        /usr/bin/my prog
7ffff7fc1000-7ffff7fc5000 r--p 00000000 00:00 0                          [vvar]
7ffff7fc5000-7ffff7fc7000 rw-p 00000000 00:00 0 
";
        let maps = parse_maps(text);
        assert_eq!(
            maps,
            [
                Mapping { start: 0x555555554000, offset: 0, path: "/usr/bin/my prog".into() },
                Mapping { start: 0x555555560000, offset: 0xc000, path: "/usr/bin/my prog".into() },
            ]
        );
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(json_str("a\"b\\c\n"), r#""a\"b\\c\u000a""#);
    }
}
