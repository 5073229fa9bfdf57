//! Argument values: how each Rust type becomes an 8-byte word.
//!
//! Integers, floats, bools and pointers are stored inline. A `&str` (any lifetime) or `String` is
//! copied into continuation records, cut at [`MAX_DYN_STR_BYTES`] on a char boundary and flagged
//! when cut. A [`Static`] string costs no copy: only its address and length are stored.

use phosphor_format::{pack_static_str, ArgType, MAX_DYN_STR_BYTES};

/// A `&'static str` argument stored by address, with no copy.
///
/// Plain `&str` arguments are copied because their lifetime is unknown; wrap string literals and
/// other static strings in `Static` to save the copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Static(pub &'static str);

impl std::fmt::Display for Static {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.0)
    }
}

/// A static string paired with its FNV-1a 64 hash, computed at compile time (Palanteer's
/// `plString_t`).
///
/// Recording one costs what a string literal costs: it is stored by address, with no copy and no
/// hashing at run time. That makes it the type for a name chosen at run time among static ones:
///
/// ```
/// use phosphor::{pstr, PString};
///
/// const READ: PString = pstr!("read");
/// const WRITE: PString = pstr!("write");
/// fn op(write: bool) {
///     phosphor::trace_scope!("io", dyn if write { WRITE } else { READ });
/// }
/// # op(true);
/// assert_eq!(READ.hash(), phosphor::fnv1a64(b"read"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PString {
    s: &'static str,
    hash: u64,
}

impl PString {
    /// Pairs `s` with its hash; `const`, so the hash is computed by the compiler.
    pub const fn new(s: &'static str) -> PString {
        PString { s, hash: phosphor_format::fnv1a64(s.as_bytes()) }
    }

    /// The string.
    pub const fn as_str(&self) -> &'static str {
        self.s
    }

    /// Its FNV-1a 64 hash: the string's id across processes.
    pub const fn hash(&self) -> u64 {
        self.hash
    }
}

impl std::fmt::Display for PString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.s)
    }
}

impl private::Sealed for PString {}

impl Arg for PString {
    const TYPE: ArgType = ArgType::StaticStr;
    #[inline(always)]
    fn word(&self) -> u64 {
        Static(self.s).word()
    }
    #[inline(always)]
    fn word_truncated(&self) -> bool {
        Static(self.s).word_truncated()
    }
    usdt!(*const u8, |s| s.s.as_ptr());
}

/// A value that can name an event chosen at run time (`dyn` names in the macros): [`PString`] and
/// [`Static`] cost what a static name costs; other strings are interned.
pub trait IntoName: private::Sealed {
    /// How the name is recorded.
    type Arg: Arg;
    /// The name as argument 0 of the event.
    fn into_name(self) -> Self::Arg;
}

impl IntoName for PString {
    type Arg = PString;
    #[inline(always)]
    fn into_name(self) -> PString {
        self
    }
}

impl IntoName for Static {
    type Arg = Static;
    #[inline(always)]
    fn into_name(self) -> Static {
        self
    }
}

/// A dynamic string, interned ([`intern`](crate::intern())): stored like a static string (no copy
/// into the event) when the interner holds it, else copied like any `&str` (a counted fallback).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interned<'a> {
    /// The interner's copy.
    Static(&'static str),
    /// Not interned: copied into the event.
    Inline(&'a str),
}

/// Interns a dynamic string (Palanteer's dynamic strings): the event then stores it like a static
/// string, and a trace file holds it once however many events use it. The interner is bounded
/// (`registry/intern.rs`: 4,096 strings, 256 KiB); when it cannot take a string, the string is
/// copied into the event instead, and [`intern_stats`](crate::intern_stats) counts the fallback.
/// The lookup hashes the string and takes no lock.
///
/// ```
/// let path = format!("/users/{}", 42);
/// phosphor::trace_instant!("http", "request", "path" => phosphor::intern(&path));
/// ```
#[inline]
pub fn intern(s: &str) -> Interned<'_> {
    match crate::registry::intern::INTERNER.intern(s) {
        Some(copy) => Interned::Static(copy),
        None => Interned::Inline(s),
    }
}

impl Interned<'_> {
    /// The string.
    pub fn as_str(&self) -> &str {
        match self {
            Interned::Static(s) => s,
            Interned::Inline(s) => s,
        }
    }
}

impl std::fmt::Display for Interned<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl private::Sealed for Interned<'_> {}

impl Arg for Interned<'_> {
    const TYPE: ArgType = ArgType::DynStr;
    const VARIES: bool = true;
    #[inline(always)]
    fn runtime_type(&self) -> ArgType {
        match self {
            Interned::Static(_) => ArgType::StaticStr,
            Interned::Inline(_) => ArgType::DynStr,
        }
    }
    #[inline(always)]
    fn word(&self) -> u64 {
        match self {
            Interned::Static(s) => Static(s).word(),
            Interned::Inline(s) => s.word(),
        }
    }
    #[inline(always)]
    fn bytes(&self) -> (&[u8], bool) {
        match self {
            Interned::Static(_) => (&[], false),
            Interned::Inline(s) => bounded(s),
        }
    }
    #[inline(always)]
    fn word_truncated(&self) -> bool {
        match self {
            Interned::Static(s) => Static(s).word_truncated(),
            Interned::Inline(_) => false,
        }
    }
    usdt!(*const u8, |s| s.as_str().as_ptr());
}

impl<'a> IntoName for &'a str {
    type Arg = Interned<'a>;
    #[inline(always)]
    fn into_name(self) -> Interned<'a> {
        intern(self)
    }
}

impl<'a> IntoName for &'a String {
    type Arg = Interned<'a>;
    #[inline(always)]
    fn into_name(self) -> Interned<'a> {
        intern(self)
    }
}

/// Seals [`Arg`]: the encoder trusts what an `Arg` says about itself (a dynamic string's length
/// sizes the event's records; a static string's word is dereferenced when the trace is decoded),
/// so only this crate's types may implement it.
pub(crate) mod private {
    pub trait Sealed {}
}

/// A value that can be an event argument. Sealed: implemented for the integers, floats, `bool`,
/// raw pointers, [`Static`], `&str`, `String`, and references to these.
///
/// Other crates cannot implement it, so no type can lie about its size or forge a static string:
///
/// ```compile_fail
/// struct Forged;
/// impl phosphor::Arg for Forged {
///     const TYPE: phosphor::format::ArgType = phosphor::format::ArgType::StaticStr;
///     fn word(&self) -> u64 { 0xdead_beef }
/// }
/// ```
pub trait Arg: private::Sealed {
    /// How the value is stored (for [`Interned`], where it is decided at run time, `DynStr`).
    const TYPE: ArgType;
    /// Whether the stored type is decided at run time ([`Arg::runtime_type`]).
    #[doc(hidden)]
    const VARIES: bool = false;
    /// The stored type of this value (`TYPE` unless `VARIES`).
    #[doc(hidden)]
    #[inline(always)]
    fn runtime_type(&self) -> ArgType {
        Self::TYPE
    }
    /// The 8-byte word; for dynamic strings, the stored length.
    fn word(&self) -> u64;
    /// The bytes to copy into continuation records (dynamic strings only) and whether they were cut.
    #[inline(always)]
    fn bytes(&self) -> (&[u8], bool) {
        (&[], false)
    }
    /// Whether the value was cut when packed into its word (static strings only).
    #[inline(always)]
    fn word_truncated(&self) -> bool {
        false
    }
    /// The value as a USDT probe argument (the `usdt` feature): integers and `bool` as they are,
    /// floats as their bits, strings and pointers as addresses.
    #[cfg(feature = "usdt")]
    #[doc(hidden)]
    type Usdt: phosphor_usdt::SdtArg;
    /// See [`Arg::Usdt`].
    #[cfg(feature = "usdt")]
    #[doc(hidden)]
    fn usdt(&self) -> Self::Usdt;
}

/// The `usdt` half of an `Arg` impl: `usdt!(Type, |self| value)`.
macro_rules! usdt {
    ($t:ty, |$s:ident| $e:expr) => {
        #[cfg(feature = "usdt")]
        type Usdt = $t;
        #[cfg(feature = "usdt")]
        #[inline(always)]
        fn usdt(&self) -> $t {
            let $s = self;
            $e
        }
    };
}
pub(crate) use usdt;

macro_rules! int_arg {
    ($ty:ident, $t:ty) => {
        impl private::Sealed for $t {}
        impl Arg for $t {
            const TYPE: ArgType = ArgType::$ty;
            #[inline(always)]
            fn word(&self) -> u64 {
                *self as u64
            }
            usdt!($t, |s| *s);
        }
    };
}
int_arg!(I64, i8);
int_arg!(I64, i16);
int_arg!(I64, i32);
int_arg!(I64, i64);
int_arg!(I64, isize);
int_arg!(U64, u8);
int_arg!(U64, u16);
int_arg!(U64, u32);
int_arg!(U64, u64);
int_arg!(U64, usize);

impl private::Sealed for f64 {}

impl Arg for f64 {
    const TYPE: ArgType = ArgType::F64;
    #[inline(always)]
    fn word(&self) -> u64 {
        self.to_bits()
    }
    usdt!(u64, |s| s.to_bits());
}

impl private::Sealed for f32 {}

impl Arg for f32 {
    const TYPE: ArgType = ArgType::F64;
    #[inline(always)]
    fn word(&self) -> u64 {
        f64::from(*self).to_bits()
    }
    usdt!(u64, |s| f64::from(*s).to_bits());
}

impl private::Sealed for bool {}

impl Arg for bool {
    const TYPE: ArgType = ArgType::Bool;
    #[inline(always)]
    fn word(&self) -> u64 {
        u64::from(*self)
    }
    usdt!(bool, |s| *s);
}

impl<T: ?Sized> private::Sealed for *const T {}

impl<T: ?Sized> Arg for *const T {
    const TYPE: ArgType = ArgType::Pointer;
    #[inline(always)]
    fn word(&self) -> u64 {
        self.cast::<()>() as usize as u64
    }
    usdt!(*const (), |s| s.cast::<()>());
}

impl<T: ?Sized> private::Sealed for *mut T {}

impl<T: ?Sized> Arg for *mut T {
    const TYPE: ArgType = ArgType::Pointer;
    #[inline(always)]
    fn word(&self) -> u64 {
        self.cast::<()>() as usize as u64
    }
    usdt!(*const (), |s| s.cast::<()>().cast_const());
}

impl private::Sealed for Static {}

impl Arg for Static {
    const TYPE: ArgType = ArgType::StaticStr;
    #[inline(always)]
    fn word(&self) -> u64 {
        pack_static_str(self.0.as_ptr() as usize, self.0.len()).0
    }
    #[inline(always)]
    fn word_truncated(&self) -> bool {
        pack_static_str(self.0.as_ptr() as usize, self.0.len()).1
    }
    usdt!(*const u8, |s| s.0.as_ptr());
}

/// The longest prefix of `s` of at most [`MAX_DYN_STR_BYTES`] bytes that ends on a char boundary.
#[inline]
fn bounded(s: &str) -> (&[u8], bool) {
    if s.len() <= MAX_DYN_STR_BYTES {
        return (s.as_bytes(), false);
    }
    let mut end = MAX_DYN_STR_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    (&s.as_bytes()[..end], true)
}

impl private::Sealed for &str {}

impl Arg for &str {
    const TYPE: ArgType = ArgType::DynStr;
    #[inline(always)]
    fn word(&self) -> u64 {
        bounded(self).0.len() as u64
    }
    #[inline(always)]
    fn bytes(&self) -> (&[u8], bool) {
        bounded(self)
    }
    usdt!(*const u8, |s| s.as_ptr());
}

impl private::Sealed for String {}

impl Arg for String {
    const TYPE: ArgType = ArgType::DynStr;
    #[inline(always)]
    fn word(&self) -> u64 {
        self.as_str().word()
    }
    #[inline(always)]
    fn bytes(&self) -> (&[u8], bool) {
        bounded(self)
    }
    usdt!(*const u8, |s| s.as_ptr());
}

impl<A: Arg> private::Sealed for &A {}

impl<A: Arg> Arg for &A {
    const TYPE: ArgType = A::TYPE;
    const VARIES: bool = A::VARIES;
    #[inline(always)]
    fn runtime_type(&self) -> ArgType {
        (**self).runtime_type()
    }
    #[inline(always)]
    fn word(&self) -> u64 {
        (**self).word()
    }
    #[inline(always)]
    fn bytes(&self) -> (&[u8], bool) {
        (**self).bytes()
    }
    #[inline(always)]
    fn word_truncated(&self) -> bool {
        (**self).word_truncated()
    }
    usdt!(A::Usdt, |s| (**s).usdt());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_dynamic_strings_are_cut_on_a_char_boundary_and_flagged() {
        let s = "é".repeat(200); // 400 bytes of 2-byte chars
        let r = s.as_str();
        let (b, cut) = Arg::bytes(&r);
        assert!(cut);
        assert!(b.len() <= MAX_DYN_STR_BYTES && b.len() % 2 == 0);
        assert!(std::str::from_utf8(b).is_ok());
        assert_eq!(s.as_str().word(), b.len() as u64);
        assert_eq!(Arg::bytes(&"short"), (&b"short"[..], false));
    }

    #[test]
    fn words_keep_their_values() {
        assert_eq!((-1i32).word() as i64, -1);
        assert_eq!(f64::from_bits(2.5f64.word()), 2.5);
        assert_eq!(true.word(), 1);
        assert_eq!(<&u64 as Arg>::TYPE, ArgType::U64);
        assert_eq!(<String as Arg>::TYPE, ArgType::DynStr);
    }
}
