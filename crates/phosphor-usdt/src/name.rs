//! Probe names made from string constants, for macros of other crates (the Phosphor bridge).
//!
//! A note's name is a string in the assembly that the macro writes, so it must be known to the
//! macro as a literal, and `macro_rules!` cannot look inside a literal, let alone a `const`. A
//! string-named probe therefore sanitises its name in const evaluation instead, and hands it to the
//! assembler as eight integers (eight bytes each, little-endian) and a length: the assembler
//! writes exactly `len` bytes of them (`.if len > i` / `.byte (w >> 8*j) & 255`).
//!
//! The name is `category__name`, or `name` alone when the category is empty, with every byte
//! outside `[A-Za-z0-9_]` replaced by `_` (a colon, a dot or a space would break the
//! `provider:name` syntax of gdb, bpftrace and perf), cut at [`MAX_NAME_LEN`] bytes.

/// The longest name a string-named probe keeps, in bytes; longer names are cut.
pub const MAX_NAME_LEN: usize = 64;

/// What joins the category to the name.
const JOIN: &[u8] = b"__";

/// The length of the joined, sanitised name of `name` in `category`.
pub const fn name_len(category: &str, name: &str) -> usize {
    let n = if category.is_empty() { name.len() } else { category.len() + JOIN.len() + name.len() };
    if n > MAX_NAME_LEN {
        MAX_NAME_LEN
    } else {
        n
    }
}

/// Byte `i` of the joined, sanitised name (0 past its end).
const fn name_byte(category: &str, name: &str, i: usize) -> u8 {
    let (c, n) = (category.as_bytes(), name.as_bytes());
    let b = if i >= name_len(category, name) {
        return 0;
    } else if c.is_empty() {
        n[i]
    } else if i < c.len() {
        c[i]
    } else if i < c.len() + JOIN.len() {
        JOIN[i - c.len()]
    } else {
        n[i - c.len() - JOIN.len()]
    };
    if b.is_ascii_alphanumeric() || b == b'_' {
        b
    } else {
        b'_'
    }
}

/// Word `k` of the joined, sanitised name: its bytes `8k..8k+8`, little-endian.
pub const fn name_word(category: &str, name: &str, k: usize) -> u64 {
    let mut w = 0u64;
    let mut j = 0;
    while j < 8 {
        w |= (name_byte(category, name, 8 * k + j) as u64) << (8 * j);
        j += 1;
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(category: &str, name: &str) -> [u8; MAX_NAME_LEN] {
        let mut out = [0u8; MAX_NAME_LEN];
        for (i, b) in out.iter_mut().enumerate().take(name_len(category, name)) {
            *b = (name_word(category, name, i / 8) >> (8 * (i % 8))) as u8;
        }
        out
    }

    fn text(bytes: &[u8]) -> &str {
        core::str::from_utf8(bytes).unwrap().trim_end_matches('\0')
    }

    #[test]
    fn names_join_the_category_and_replace_what_tools_cannot_parse() {
        assert_eq!(text(&decode("db", "query")), "db__query");
        assert_eq!(text(&decode("net.rx", "packet: ok")), "net_rx__packet__ok");
        assert_eq!(text(&decode("", "plain")), "plain");
        assert_eq!(text(&decode("é", "x")), "____x");
        assert_eq!(name_len("db", "query"), 9);
    }

    #[test]
    fn long_names_are_cut_at_the_limit() {
        let long = "a123456789b123456789c123456789d123456789e123456789f123456789g123456789";
        assert_eq!(name_len("cat", long), MAX_NAME_LEN);
        let d = decode("cat", long);
        assert_eq!(&d[..8], b"cat__a12");
        assert_eq!(d[MAX_NAME_LEN - 1], long.as_bytes()[MAX_NAME_LEN - 6]);
    }
}
