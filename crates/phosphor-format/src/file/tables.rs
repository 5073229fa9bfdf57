//! The tables: interned strings, callsites and thread names.
//!
//! Tables are written as blocks that *append* to what earlier blocks defined, so a streaming
//! writer can emit each string, callsite or thread name when it first appears. A string's index is
//! its position across all string blocks, in file order. Callsites and threads refer to strings by
//! index, so a string block must come before the blocks that use it; a callsite must be defined
//! before a chunk that records it. A later definition of the same callsite id or thread id replaces
//! the earlier one.
//!
//! ```text
//! strings block:   count u32, then count × (len u32, UTF-8 bytes)
//! callsite block:  count u32, entry_size u32 (40 in v1), then count entries:
//!                    id u32, phase u8, level u8 (1.2), flags u8 (1.2: bit 0 name from arg 0; 1.3: bit 1 flow), reserved u8, line u32, category u32, name u32,
//!                    arg name 0 u32, arg name 1 u32, file u32 (string indices), name_hash u64
//! thread block:    count u32, entry_size u32 (8 in v1), then count × (tid u32, name u32)
//! ```
//!
//! A later minor version may lengthen entries; readers skip the bytes past the v1 fields.
//!
//! The reader stores entries as they are in the file, strings as indices ([`RawCallsite`]), and
//! lends [`Callsite`]s whose strings are handles into the one [`StringTable`].

use super::bytes::Body;
use super::error::{Error, ErrorKind};
use super::strings::{StringTable, TableStr};
use crate::{IdMap, Level, Phase, FIRST_CALLSITE_ID};

/// Callsite flag (entry byte 6, format 1.2): each event's name is the string value of its
/// argument 0, chosen at run time.
pub const CALLSITE_NAME_FROM_ARG0: u8 = 1;

/// Callsite flag (entry byte 6, format 1.3): a slice (a `Complete` event) whose argument 0 is the
/// id of the async slice it works for, such as one poll of an instrumented future; tools link the
/// two with a flow. On an async begin or end: the async slice is an instrumented future's, whose
/// polls are so flagged (its begin starts the flow, its end ends it).
pub const CALLSITE_FLOW_ARG0: u8 = 2;

/// Bytes of a v1 callsite entry.
pub(crate) const CALLSITE_ENTRY_BYTES: usize = 40;
/// Bytes of a v1 thread entry.
pub(crate) const THREAD_ENTRY_BYTES: usize = 8;

/// A callsite: what its events record and where it is in the source.
///
/// `S` is how it holds its strings. [`Writer::write_callsites`](super::Writer::write_callsites)
/// takes any `S` that reads as a `str` (`String`, the default, or `&str`); a
/// [`Reader`](super::Reader) lends [`Callsite`]s, whose strings are [`TableStr`]s: handles to the
/// one copy of each string the reader keeps, however many callsites name it.
/// [`into_owned`](Self::into_owned) copies the strings out, and callsites compare equal across
/// string types when their strings are equal.
#[derive(Clone, Copy, Debug)]
pub struct CallsiteInfo<S = String> {
    /// The id records refer to it by.
    pub id: u32,
    /// Category.
    pub category: S,
    /// Event name (for logs, the format string).
    pub name: S,
    /// What it records.
    pub phase: Phase,
    /// Argument names, empty where absent.
    pub arg_names: [S; 2],
    /// Source file.
    pub file: S,
    /// Source line.
    pub line: u32,
    /// FNV-1a 64 hash of the name, as recorded.
    pub name_hash: u64,
    /// The level of a log callsite (whose `name` is the format string); `None` for other kinds.
    pub level: Option<Level>,
    /// Whether each event's name is its argument 0, chosen at run time; `name` is then only a
    /// description of the callsite (the expression's text), and tools don't show argument 0 as an
    /// argument.
    pub dynamic_name: bool,
    /// Whether argument 0 of each event is the id of the async slice the event works for, which
    /// tools link to it with a flow (format 1.3).
    pub flow: bool,
}

/// A callsite as a [`Reader`](super::Reader) lends it: its strings are handles to the reader's
/// string table, so it is small and `Copy`.
pub type Callsite<'a> = CallsiteInfo<TableStr<'a>>;

impl<S> CallsiteInfo<S> {
    /// The same callsite with owned strings.
    pub fn into_owned(self) -> CallsiteInfo
    where
        S: Into<String>,
    {
        let [a0, a1] = self.arg_names;
        CallsiteInfo {
            id: self.id,
            category: self.category.into(),
            name: self.name.into(),
            phase: self.phase,
            arg_names: [a0.into(), a1.into()],
            file: self.file.into(),
            line: self.line,
            name_hash: self.name_hash,
            level: self.level,
            dynamic_name: self.dynamic_name,
            flow: self.flow,
        }
    }
}

impl<A: PartialEq<B>, B> PartialEq<CallsiteInfo<B>> for CallsiteInfo<A> {
    fn eq(&self, o: &CallsiteInfo<B>) -> bool {
        self.id == o.id
            && self.category == o.category
            && self.name == o.name
            && self.phase == o.phase
            && self.arg_names == o.arg_names
            && self.file == o.file
            && self.line == o.line
            && self.name_hash == o.name_hash
            && self.level == o.level
            && self.dynamic_name == o.dynamic_name
            && self.flow == o.flow
    }
}

impl<S: Eq> Eq for CallsiteInfo<S> {}

/// A callsite entry as stored (format 1.2): its strings as string table indices. The writer
/// and the allocation-free encoders of [`raw`](super::raw) both encode entries through it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawCallsite {
    /// The id records refer to it by (at least 16).
    pub id: u32,
    /// What it records.
    pub phase: Phase,
    /// The level of a log callsite.
    pub level: Option<Level>,
    /// Whether each event's name is its argument 0.
    pub dynamic_name: bool,
    /// Whether argument 0 of each event is the id of an async slice (format 1.3).
    pub flow: bool,
    /// Source line.
    pub line: u32,
    /// String indices of the category, name, argument names 0 and 1, and source file.
    pub strings: [u32; 5],
    /// FNV-1a 64 hash of the name.
    pub name_hash: u64,
}

impl RawCallsite {
    /// The entry's 40 bytes.
    pub fn encode(&self) -> [u8; CALLSITE_ENTRY_BYTES] {
        let mut e = [0u8; CALLSITE_ENTRY_BYTES];
        e[0..4].copy_from_slice(&self.id.to_le_bytes());
        let flags = if self.dynamic_name { CALLSITE_NAME_FROM_ARG0 } else { 0 }
            | if self.flow { CALLSITE_FLOW_ARG0 } else { 0 };
        e[4..8].copy_from_slice(&[self.phase as u8, self.level.map_or(0, |l| l as u8), flags, 0]);
        e[8..12].copy_from_slice(&self.line.to_le_bytes());
        for (k, i) in self.strings.iter().enumerate() {
            e[12 + 4 * k..16 + 4 * k].copy_from_slice(&i.to_le_bytes());
        }
        e[32..40].copy_from_slice(&self.name_hash.to_le_bytes());
        e
    }
}

impl RawCallsite {
    /// The callsite, its strings resolved in `strings` (which has every index it names).
    fn resolve(self, strings: &StringTable) -> Callsite<'_> {
        let [category, name, a0, a1, file] = self.strings.map(|i| strings.handle(i));
        CallsiteInfo {
            id: self.id,
            category,
            name,
            phase: self.phase,
            arg_names: [a0, a1],
            file,
            line: self.line,
            name_hash: self.name_hash,
            level: self.level,
            dynamic_name: self.dynamic_name,
            flow: self.flow,
        }
    }
}

/// The tables read so far: each string once, and entries that name strings by index.
///
/// A callsite costs its 40-byte entry and a slot of the id index, a thread name 8 bytes and its
/// slot, whatever the length of the strings they name.
#[derive(Debug, Default)]
pub(crate) struct Tables {
    pub(crate) strings: StringTable,
    /// Callsites in the order first defined (a redefinition replaces the entry in place).
    callsites: Vec<RawCallsite>,
    /// Callsite id → position in `callsites`, looked up once per event: an array for a writer's
    /// ids, which come in order; FxHash, not SipHash, for others (ids come from the file, but a
    /// collision-flooding file only slows its own reading).
    by_id: IdMap,
    /// Thread id → string index of its name.
    threads: IdMap,
    /// Callsites replaced by a later definition of their id, by id: (the [`Tables::version`] when
    /// replaced, the entry replaced), oldest first. An event kept past its chunk
    /// ([`HeldEvents`](super::HeldEvents)) is decoded with the definition it was read under.
    replaced: std::collections::HashMap<u32, Vec<(u32, RawCallsite)>>,
    /// Definitions that replaced another that differs from them (saturates).
    version: u32,
}

/// The most replaced callsite entries kept ([`Tables::callsite_at`]): 48 bytes each, so 48 MiB.
/// Past it, an event kept past its chunk is decoded with its callsite's latest definition.
pub(crate) const MAX_REPLACED: u32 = 1 << 20;

impl Tables {
    /// The callsite with `id`, if defined.
    #[inline]
    pub(crate) fn callsite(&self, id: u32) -> Option<Callsite<'_>> {
        let at = self.by_id.get(id)?;
        Some(self.callsites[at as usize].resolve(&self.strings))
    }

    /// How many times a callsite was redefined differently so far: the tables' version.
    pub(crate) fn version(&self) -> u32 {
        self.version
    }

    /// The callsite with `id` as it was defined when the tables were at `version`.
    pub(crate) fn callsite_at(&self, id: u32, version: u32) -> Option<Callsite<'_>> {
        if version != self.version {
            if let Some(list) = self.replaced.get(&id) {
                // The first replacement at or after `version` replaced the entry in force then.
                let at = list.partition_point(|(v, _)| *v < version);
                if let Some((_, c)) = list.get(at) {
                    return Some(c.resolve(&self.strings));
                }
            }
        }
        self.callsite(id)
    }

    /// The phase of the callsite with `id`, if defined: one lookup, nothing resolved.
    #[inline]
    pub(crate) fn phase(&self, id: u32) -> Option<Phase> {
        Some(self.callsites[self.by_id.get(id)? as usize].phase)
    }

    pub(crate) fn has_callsite(&self, id: u32) -> bool {
        self.by_id.contains(id)
    }

    /// Every callsite, in the order first defined.
    pub(crate) fn callsites(&self) -> impl ExactSizeIterator<Item = Callsite<'_>> + '_ {
        self.callsites.iter().map(|c| c.resolve(&self.strings))
    }

    pub(crate) fn thread_name(&self, tid: u32) -> Option<TableStr<'_>> {
        self.threads.get(tid).map(|i| self.strings.handle(i))
    }

    pub(crate) fn thread_names(&self) -> impl ExactSizeIterator<Item = (u32, TableStr<'_>)> + '_ {
        self.threads.iter().map(|(t, i)| (t, self.strings.handle(i)))
    }

    /// A string index field, checked against the table.
    fn string_field(&self, b: &mut Body<'_>) -> Result<u32, Error> {
        let at = b.offset();
        let i = b.u32()?;
        if i as usize >= self.strings.len() {
            let kind = ErrorKind::UnknownString { index: u64::from(i), len: self.strings.len() };
            return Err(Error::new(kind, at));
        }
        Ok(i)
    }

    /// Reads a strings block; returns how many strings it added.
    pub(crate) fn read_strings(&mut self, body: &[u8], base: u64) -> Result<u32, Error> {
        let mut b = Body::new(body, base, "string block");
        let count = b.u32()?;
        for _ in 0..count {
            let s = b.str()?;
            self.strings.push(s);
        }
        b.finish()?;
        Ok(count)
    }

    /// Reads the count and entry size of a table block, checking they fill the body.
    fn entries<'b>(
        body: &'b [u8],
        base: u64,
        what: &'static str,
        min: usize,
    ) -> Result<(Body<'b>, u32, usize), Error> {
        let mut b = Body::new(body, base, what);
        let count = b.u32()?;
        let at = b.offset();
        let size = b.u32()? as usize;
        if size < min {
            return Err(Error::malformed(what, format!("entry size {size} is below {min}"), at));
        }
        if (count as u64).checked_mul(size as u64) != Some(b.remaining() as u64) {
            return Err(Error::malformed(
                what,
                format!("{count} entries of {size} bytes do not fill the {} bytes left", b.remaining()),
                at,
            ));
        }
        Ok((b, count, size))
    }

    /// Reads a callsite block; returns how many callsites it defined.
    pub(crate) fn read_callsites(&mut self, body: &[u8], base: u64) -> Result<u32, Error> {
        let what = "callsite block";
        let (mut b, count, size) = Self::entries(body, base, what, CALLSITE_ENTRY_BYTES)?;
        for _ in 0..count {
            let at = b.offset();
            let id = b.u32()?;
            if id < FIRST_CALLSITE_ID {
                return Err(Error::malformed(what, format!("callsite id {id} is reserved"), at));
            }
            let code = b.u8()?;
            let phase = Phase::from_code(code)
                .ok_or_else(|| Error::malformed(what, format!("unknown phase code {code}"), at + 4))?;
            let level_code = b.u8()?;
            let level =
                match level_code {
                    0 => None,
                    c => Some(Level::from_code(c).ok_or_else(|| {
                        Error::malformed(what, format!("unknown log level code {c}"), at + 5)
                    })?),
                };
            let flags = b.u8()?;
            if flags & !(CALLSITE_NAME_FROM_ARG0 | CALLSITE_FLOW_ARG0) != 0 {
                return Err(Error::malformed(what, format!("unknown callsite flags {flags:#x}"), at + 6));
            }
            b.take(1)?;
            let line = b.u32()?;
            let mut strings = [0u32; 5];
            for s in &mut strings {
                *s = self.string_field(&mut b)?;
            }
            let name_hash = b.u64()?;
            b.take(size - CALLSITE_ENTRY_BYTES)?;
            let entry = RawCallsite {
                id,
                phase,
                level,
                dynamic_name: flags & CALLSITE_NAME_FROM_ARG0 != 0,
                flow: flags & CALLSITE_FLOW_ARG0 != 0,
                line,
                strings,
                name_hash,
            };
            // Positions fit in u32: there is one per distinct id.
            let next = self.callsites.len() as u32;
            match self.by_id.get(id) {
                Some(at) => {
                    let old = std::mem::replace(&mut self.callsites[at as usize], entry);
                    if old != entry && self.version < MAX_REPLACED {
                        self.replaced.entry(id).or_default().push((self.version, old));
                        self.version += 1;
                    }
                }
                None => {
                    self.by_id.insert(id, next);
                    self.callsites.push(entry);
                }
            }
        }
        Ok(count)
    }

    /// Reads a thread block; returns how many names it defined.
    pub(crate) fn read_threads(&mut self, body: &[u8], base: u64) -> Result<u32, Error> {
        let (mut b, count, size) = Self::entries(body, base, "thread block", THREAD_ENTRY_BYTES)?;
        for _ in 0..count {
            let tid = b.u32()?;
            let name = self.string_field(&mut b)?;
            b.take(size - THREAD_ENTRY_BYTES)?;
            self.threads.insert(tid, name);
        }
        Ok(count)
    }
}
