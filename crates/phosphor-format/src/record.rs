//! The 32-byte record and its meta word.
//!
//! ```text
//! offset  size  field
//!      0     8  ts      raw clock value (ticks of the trace's clock)
//!      8     4  id      callsite id (ids below FIRST_CALLSITE_ID are reserved markers)
//!     12     4  meta    see below
//!     16     8  slot 0  first payload word
//!     24     8  slot 1  second payload word
//! ```
//!
//! The payload of an event is a list of 8-byte words: first up to [`MAX_LEAD_WORDS`] lead words
//! whose meaning comes from the phase (the duration of a complete event, the id of an async event),
//! then one word per argument. The first two words sit in the slots; the rest, followed by the bytes
//! of dynamic strings, go to continuation records that follow the event.
//!
//! Meta bit layout:
//!
//! ```text
//! bits  0..8   continuation records that follow this one (0..=255)
//! bit   8      truncated: a dynamic or static string argument was cut
//! bits 12..14  lead words before the arguments (0..=MAX_LEAD_WORDS)
//! bits 16..20  ArgType of argument 0 (0 = absent)
//! bits 20..24  ArgType of argument 1 (0 = absent)
//! bits 24..32  reserved, zero in version 1
//! ```

/// Bytes in one record.
pub const RECORD_SIZE: usize = 32;

/// Arguments an event can carry.
pub const MAX_ARGS: usize = 2;

/// Parameters a log event can carry (packed under [`ArgType::Params`]).
pub const MAX_PARAMS: usize = 16;

/// Lead words an event can carry before its arguments.
pub const MAX_LEAD_WORDS: usize = 3;

/// The longest dynamic string argument kept; longer ones are cut at a char boundary and flagged.
pub const MAX_DYN_STR_BYTES: usize = 256;

/// One 32-byte trace record.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// Raw clock value.
    pub ts: u64,
    /// Callsite id, or a reserved marker id.
    pub id: u32,
    /// Payload description.
    pub meta: Meta,
    /// The first two payload words.
    pub slots: [u64; 2],
}

const _: () = assert!(core::mem::size_of::<Record>() == RECORD_SIZE);

impl Record {
    /// Builds a record.
    #[inline(always)]
    pub const fn new(ts: u64, id: u32, meta: Meta, slots: [u64; 2]) -> Record {
        Record { ts, id, meta, slots }
    }

    /// The record's bytes, little-endian, in the layout documented above.
    pub fn to_bytes(&self) -> [u8; RECORD_SIZE] {
        let mut b = [0u8; RECORD_SIZE];
        b[0..8].copy_from_slice(&self.ts.to_le_bytes());
        b[8..12].copy_from_slice(&self.id.to_le_bytes());
        b[12..16].copy_from_slice(&self.meta.0.to_le_bytes());
        b[16..24].copy_from_slice(&self.slots[0].to_le_bytes());
        b[24..32].copy_from_slice(&self.slots[1].to_le_bytes());
        b
    }

    /// A continuation record holding the four payload words `w` in order, as
    /// [`encode_continuation`] lays them out (little-endian words: the first fills `ts`, the second
    /// `id` and `meta`, the last two the slots). For writers that fill a whole continuation record
    /// of words without going through `encode_continuation`.
    #[inline(always)]
    pub const fn continuation_of_words(w: [u64; 4]) -> Record {
        Record { ts: w[0], id: w[1] as u32, meta: Meta((w[1] >> 32) as u32), slots: [w[2], w[3]] }
    }

    /// The inverse of [`Record::to_bytes`].
    pub fn from_bytes(b: &[u8; RECORD_SIZE]) -> Record {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        Record { ts: u64_at(0), id: u32_at(8), meta: Meta(u32_at(12)), slots: [u64_at(16), u64_at(24)] }
    }
}

/// The meta word of a record; see the module docs for its bit layout.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Meta(pub u32);

impl Meta {
    const CONT_MASK: u32 = 0xff;
    /// Set when a string argument was cut.
    pub const TRUNCATED: u32 = 1 << 8;
    const LEAD_SHIFT: u32 = 12;
    const ARG0_SHIFT: u32 = 16;
    const ARG1_SHIFT: u32 = 20;
    const RESERVED: u32 = 0xff00_0000 | 0x0000_0e00 | 0x0000_c000;

    /// A meta word for an event with `lead` lead words and the given argument types.
    #[inline(always)]
    pub const fn new(lead: usize, arg0: ArgType, arg1: ArgType) -> Meta {
        Meta(
            ((lead as u32) << Self::LEAD_SHIFT)
                | ((arg0 as u32) << Self::ARG0_SHIFT)
                | ((arg1 as u32) << Self::ARG1_SHIFT),
        )
    }

    /// The same meta with `n` continuation records (at most 255).
    #[inline(always)]
    pub const fn with_continuation(self, n: u32) -> Meta {
        Meta((self.0 & !Self::CONT_MASK) | (n & Self::CONT_MASK))
    }

    /// The same meta with the truncated flag set or cleared.
    #[inline(always)]
    pub const fn with_truncated(self, truncated: bool) -> Meta {
        if truncated {
            Meta(self.0 | Self::TRUNCATED)
        } else {
            Meta(self.0 & !Self::TRUNCATED)
        }
    }

    /// Continuation records that follow.
    pub const fn continuation(self) -> usize {
        (self.0 & Self::CONT_MASK) as usize
    }

    /// Whether a string argument was cut.
    pub const fn truncated(self) -> bool {
        self.0 & Self::TRUNCATED != 0
    }

    /// Lead words before the arguments.
    pub const fn lead_words(self) -> usize {
        ((self.0 >> Self::LEAD_SHIFT) & 0x3) as usize
    }

    /// The raw 4-bit type code of argument `i` (0 or 1).
    pub const fn arg_code(self, i: usize) -> u8 {
        let shift = if i == 0 { Self::ARG0_SHIFT } else { Self::ARG1_SHIFT };
        ((self.0 >> shift) & 0xf) as u8
    }

    /// Bits that version 1 leaves zero.
    pub const fn reserved_bits(self) -> u32 {
        self.0 & Self::RESERVED
    }
}

/// The type of an argument value, stored in 4 bits of [`Meta`].
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArgType {
    /// No argument in this position.
    None = 0,
    /// Signed integer.
    I64 = 1,
    /// Unsigned integer.
    U64 = 2,
    /// Float, stored as its bits.
    F64 = 3,
    /// Boolean, stored as 0 or 1.
    Bool = 4,
    /// A `&'static str` of this process, packed by [`pack_static_str`].
    StaticStr = 5,
    /// A raw pointer's address.
    Pointer = 6,
    /// A string copied into continuation records; the word holds its stored length.
    DynStr = 7,
    /// Packed parameters (a log's, format 1.2): only as argument 0, with argument 1 absent. Its
    /// word is a descriptor ([`params_desc`]); one word per parameter follows it, then the bytes of
    /// the dynamic-string parameters in order.
    Params = 8,
}

impl ArgType {
    /// Decodes a 4-bit type code.
    pub const fn from_code(code: u8) -> Option<ArgType> {
        Some(match code {
            0 => ArgType::None,
            1 => ArgType::I64,
            2 => ArgType::U64,
            3 => ArgType::F64,
            4 => ArgType::Bool,
            5 => ArgType::StaticStr,
            6 => ArgType::Pointer,
            7 => ArgType::DynStr,
            8 => ArgType::Params,
            _ => return None,
        })
    }
}

/// What kind of event a callsite records.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Opens a slice that a later [`Phase::End`] of the same thread closes.
    Begin = 1,
    /// Closes the innermost open slice; the tools check that its name matches.
    End = 2,
    /// A slice with its duration (lead word 0) recorded at its end; `ts` is its start.
    Complete = 3,
    /// A point in time.
    Instant = 4,
    /// A counter sample; argument 0 is the value.
    Counter = 5,
    /// Opens an async slice; lead word 0 is its id.
    AsyncBegin = 6,
    /// Closes an async slice; lead word 0 is its id.
    AsyncEnd = 7,
    /// A log message whose format is the callsite name.
    Log = 8,
    /// Time spent waiting for a lock; like [`Phase::Complete`].
    LockWait = 9,
    /// Time a lock was held; like [`Phase::Complete`].
    LockHeld = 10,
    /// A named value recorded inside the current scope (Palanteer's `plData`); argument 0 is the
    /// value. Format 1.2.
    Data = 11,
}

impl Phase {
    /// Decodes a phase code.
    pub const fn from_code(code: u8) -> Option<Phase> {
        Some(match code {
            1 => Phase::Begin,
            2 => Phase::End,
            3 => Phase::Complete,
            4 => Phase::Instant,
            5 => Phase::Counter,
            6 => Phase::AsyncBegin,
            7 => Phase::AsyncEnd,
            8 => Phase::Log,
            9 => Phase::LockWait,
            10 => Phase::LockHeld,
            11 => Phase::Data,
            _ => return None,
        })
    }

    /// Lead words an event of this phase carries before its arguments.
    pub const fn lead_words(self) -> usize {
        match self {
            Phase::Complete | Phase::LockWait | Phase::LockHeld | Phase::AsyncBegin | Phase::AsyncEnd => 1,
            _ => 0,
        }
    }

    /// Whether lead word 0 is a duration in clock ticks.
    pub const fn has_duration(self) -> bool {
        matches!(self, Phase::Complete | Phase::LockWait | Phase::LockHeld)
    }

    /// A short lowercase name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Phase::Begin => "begin",
            Phase::End => "end",
            Phase::Complete => "complete",
            Phase::Instant => "instant",
            Phase::Counter => "counter",
            Phase::AsyncBegin => "async_begin",
            Phase::AsyncEnd => "async_end",
            Phase::Log => "log",
            Phase::LockWait => "lock_wait",
            Phase::LockHeld => "lock_held",
            Phase::Data => "data",
        }
    }
}

/// The descriptor word of packed parameters: the 4-bit [`ArgType`] code of parameter `i` in bits
/// `4i..4i+4`, zero nibbles after the last parameter. Usable in constants; fails to compile (or
/// panics) for more than [`MAX_PARAMS`] types, or for `None` or `Params` among them.
pub const fn params_desc(types: &[ArgType]) -> u64 {
    assert!(types.len() <= MAX_PARAMS, "at most 16 log parameters");
    let mut desc = 0u64;
    let mut i = 0;
    while i < types.len() {
        let code = types[i] as u64;
        assert!(code != 0 && code != ArgType::Params as u64, "a parameter's type must be a value type");
        desc |= code << (4 * i);
        i += 1;
    }
    desc
}

const STATIC_STR_ADDR_BITS: u32 = 48;
const STATIC_STR_ADDR_MASK: u64 = (1 << STATIC_STR_ADDR_BITS) - 1;
const STATIC_STR_MAX_LEN: usize = u16::MAX as usize;

/// Packs a static string's address (low 48 bits) and length (high 16 bits) into one word.
///
/// Returns the word and whether the string was cut: a string longer than 65,535 bytes keeps that
/// many bytes, and an address that does not fit in 48 bits (never the case for static data on
/// x86-64 or aarch64 Linux) is stored as an empty string.
#[inline(always)]
pub fn pack_static_str(addr: usize, len: usize) -> (u64, bool) {
    let addr = addr as u64;
    if addr & !STATIC_STR_ADDR_MASK != 0 {
        return (0, true);
    }
    let kept = len.min(STATIC_STR_MAX_LEN);
    (addr | ((kept as u64) << STATIC_STR_ADDR_BITS), kept != len)
}

/// The inverse of [`pack_static_str`]: `(address, length)`.
pub const fn unpack_static_str(word: u64) -> (u64, usize) {
    (word & STATIC_STR_ADDR_MASK, (word >> STATIC_STR_ADDR_BITS) as usize)
}

/// Records needed after the main record for `extra_words` words and `str_bytes` string bytes.
#[inline(always)]
pub const fn continuation_records(extra_words: usize, str_bytes: usize) -> usize {
    (extra_words * 8 + str_bytes).div_ceil(RECORD_SIZE)
}

/// Writes the continuation payload: `extra_words` (the words after the first two), then the bytes
/// of every string in order. Returns the number of records written into `out`.
///
/// # Panics
///
/// If `out` is shorter than the payload needs; callers size it with the same arguments.
#[inline]
pub fn encode_continuation(
    extra_words: &[u64],
    strs: &[&[u8]],
    out: &mut [core::mem::MaybeUninit<Record>],
) -> usize {
    /// Copies slices into 32-byte blocks, emitting each block as it fills.
    struct Blocks<'o> {
        out: &'o mut [core::mem::MaybeUninit<Record>],
        block: [u8; RECORD_SIZE],
        fill: usize,
        written: usize,
    }
    impl Blocks<'_> {
        fn push(&mut self, mut bytes: &[u8]) {
            while !bytes.is_empty() {
                let take = bytes.len().min(RECORD_SIZE - self.fill);
                self.block[self.fill..self.fill + take].copy_from_slice(&bytes[..take]);
                self.fill += take;
                bytes = &bytes[take..];
                if self.fill == RECORD_SIZE {
                    self.flush();
                }
            }
        }
        fn flush(&mut self) {
            self.block[self.fill..].fill(0);
            self.out[self.written].write(Record::from_bytes(&self.block));
            self.written += 1;
            self.fill = 0;
        }
    }
    let mut b = Blocks { out, block: [0; RECORD_SIZE], fill: 0, written: 0 };
    for w in extra_words {
        b.push(&w.to_le_bytes());
    }
    for s in strs {
        b.push(s);
    }
    if b.fill > 0 {
        b.flush();
    }
    b.written
}
