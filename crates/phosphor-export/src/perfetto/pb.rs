//! The protobuf wire format, as much of it as the Perfetto exporter writes: varints, tags, and
//! length-delimited fields, appended to an [`Enc`].
//!
//! Encoding follows <https://protobuf.dev/programming-guides/encoding/>. Integers are plain varints
//! (`int32`/`int64` negatives are sign-extended to ten bytes; no field written here is `sint`, so
//! there is no zigzag). Every length is the minimal varint, so the output is canonical: a parser
//! re-serialising it gets the same number of bytes, which the tests check.
//!
//! A nested message is written in place: [`Enc::begin`] leaves one byte for its length, and
//! [`Enc::end`] fills it in, moving the body along in the rare case that the length needs more than
//! one byte (a message of 128 bytes or more). That spares an intermediate buffer per message.

/// Wire type of varint fields (integers, bools, enums).
pub const VARINT: u32 = 0;
/// Wire type of 64-bit fixed fields (`double`, `fixed64`).
pub const I64: u32 = 1;
/// Wire type of length-delimited fields (strings, bytes, messages).
pub const LEN: u32 = 2;

/// Room kept past what was written: a varint (at most ten bytes) is stored as sixteen.
const SLACK: usize = 16;

/// Bytes being encoded. The buffer is kept at least [`SLACK`] bytes longer than what was written
/// (`pos`), so a varint is stored whole with one room check, without the length and capacity
/// bookkeeping of a `Vec::push` per byte (which was a third of the exporter's time).
#[derive(Debug, Default)]
pub struct Enc {
    data: Vec<u8>,
    pos: usize,
}

impl Enc {
    /// An empty buffer with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Enc {
        Enc { data: vec![0; capacity + SLACK], pos: 0 }
    }

    /// The bytes written.
    pub fn as_slice(&self) -> &[u8] {
        &self.data[..self.pos]
    }

    /// Bytes written.
    pub fn len(&self) -> usize {
        self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.pos == 0
    }

    /// Forgets what was written, keeping the room.
    pub fn clear(&mut self) {
        self.pos = 0;
    }

    /// Makes room for `n` more bytes (and a varint after them).
    #[inline(always)]
    fn room(&mut self, n: usize) {
        if self.data.len() - self.pos < n + SLACK {
            self.grow(n);
        }
    }

    /// Doubles the room, or for a string longer than the buffer (a long name) makes room for it
    /// and 64 KiB more: doubling would zero-fill up to twice its length.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, n: usize) {
        let need = self.pos + n + SLACK;
        let len = if n >= self.data.len() { need + (64 << 10) } else { need.max(self.data.len() * 2) };
        self.data.resize(len.max(64), 0);
    }

    /// Forgets what was written, and gives the room back if it grew past `keep` bytes (for one
    /// long packet), so that it is not held for the rest of the export.
    pub fn clear_shrinking(&mut self, keep: usize) {
        self.pos = 0;
        if self.data.len() > keep + SLACK {
            self.data = vec![0; keep + SLACK];
        }
    }

    /// Appends `v` as a varint: seven bits per byte, least significant first.
    #[inline(always)]
    pub fn varint(&mut self, v: u64) {
        self.room(0);
        let pos = self.pos;
        if v < 0x80 {
            self.data[pos] = v as u8;
            self.pos = pos + 1;
        } else {
            self.pos = pos + write_varint(&mut self.data[pos..pos + SLACK], v);
        }
    }

    /// Appends a field key: the field number and the wire type.
    #[inline(always)]
    pub fn tag(&mut self, field: u32, wire_type: u32) {
        self.varint(u64::from(field << 3 | wire_type));
    }

    /// An unsigned integer field (`uint32`, `uint64`, enums).
    #[inline(always)]
    pub fn uint(&mut self, field: u32, v: u64) {
        self.tag(field, VARINT);
        self.varint(v);
    }

    /// A signed integer field (`int32`, `int64`): two's complement, so a negative value takes ten
    /// bytes (an `int32` is sign-extended to 64 bits first, as the encoding requires).
    #[inline(always)]
    pub fn int(&mut self, field: u32, v: i64) {
        self.uint(field, v as u64);
    }

    /// A `bool` field.
    #[inline(always)]
    pub fn boolean(&mut self, field: u32, v: bool) {
        self.uint(field, u64::from(v));
    }

    /// A `double` field: the IEEE 754 bits, little-endian.
    #[inline]
    pub fn double(&mut self, field: u32, v: f64) {
        self.tag(field, I64);
        self.put(&v.to_bits().to_le_bytes());
    }

    /// A `string` or `bytes` field.
    #[inline]
    pub fn bytes(&mut self, field: u32, v: &[u8]) {
        self.tag(field, LEN);
        self.varint(v.len() as u64);
        self.put(v);
    }

    #[inline]
    pub fn put(&mut self, v: &[u8]) {
        self.room(v.len());
        self.data[self.pos..self.pos + v.len()].copy_from_slice(v);
        self.pos += v.len();
    }

    /// [`Enc::put`] for a few bytes (a held slice's fields, about 10 to 30): eight at a time,
    /// in place, where `put` calls `memcpy`, whose call costs more than the copy at that size.
    #[inline]
    pub fn put_short(&mut self, v: &[u8]) {
        let n = v.len();
        self.room(n);
        let out = &mut self.data[self.pos..self.pos + n];
        if n >= 8 {
            for (d, s) in out.chunks_exact_mut(8).zip(v.chunks_exact(8)) {
                d.copy_from_slice(s);
            }
            // The last eight, overlapping the words before if `n` is not a multiple of eight.
            out[n - 8..].copy_from_slice(&v[n - 8..]);
        } else {
            for (d, s) in out.iter_mut().zip(v) {
                *d = *s;
            }
        }
        self.pos += n;
    }

    /// Opens a nested message in `field`; returns where its body starts, for [`Enc::end`].
    #[inline]
    pub fn begin(&mut self, field: u32) -> usize {
        self.tag(field, LEN);
        self.put(&[0]);
        self.pos
    }

    /// Closes the nested message whose body starts at `start`, writing its length.
    #[inline]
    pub fn end(&mut self, start: usize) {
        let len = self.pos - start;
        if len < 0x80 {
            self.data[start - 1] = len as u8;
        } else {
            self.widen(start, len);
        }
    }

    /// The length needs more than the one byte [`Enc::begin`] left: move the body up to make room.
    #[cold]
    #[inline(never)]
    fn widen(&mut self, start: usize, len: usize) {
        // On the stack: an `Enc` would allocate and zero its first 64 KiB for these few bytes, for
        // every message past 127 bytes (a log of 16 parameters took seconds per thousand).
        let mut prefix = [0u8; 10];
        let n = write_varint(&mut prefix, len as u64);
        self.room(n - 1);
        self.data.copy_within(start..start + len, start + n - 1);
        self.data[start - 1..start - 1 + n].copy_from_slice(&prefix[..n]);
        self.pos += n - 1;
    }
}

/// Writes `v` as a varint at the start of `out` (10 bytes hold any); returns its length.
#[inline]
pub(super) fn write_varint(out: &mut [u8], mut v: u64) -> usize {
    let mut n = 0;
    while v >= 0x80 {
        out[n] = v as u8 | 0x80;
        v >>= 7;
        n += 1;
    }
    out[n] = v as u8;
    n + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(f: impl FnOnce(&mut Enc)) -> Vec<u8> {
        let mut b = Enc::default();
        f(&mut b);
        b.as_slice().to_vec()
    }

    #[test]
    fn varints_take_seven_bits_per_byte_least_significant_first() {
        assert_eq!(enc(|b| b.varint(0)), [0x00]);
        assert_eq!(enc(|b| b.varint(1)), [0x01]);
        assert_eq!(enc(|b| b.varint(127)), [0x7f]);
        assert_eq!(enc(|b| b.varint(128)), [0x80, 0x01]);
        assert_eq!(enc(|b| b.varint(300)), [0xac, 0x02]);
        assert_eq!(enc(|b| b.varint(16_383)), [0xff, 0x7f]);
        assert_eq!(enc(|b| b.varint(16_384)), [0x80, 0x80, 0x01]);
        assert_eq!(enc(|b| b.varint(u64::MAX)), [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    }

    #[test]
    fn varints_at_every_power_of_two_round_trip() {
        for shift in 0..64 {
            for v in [(1u64 << shift) - 1, 1 << shift, (1 << shift) + 1] {
                let bytes = enc(|b| b.varint(v));
                assert_eq!(bytes.len(), (64 - (v | 1).leading_zeros() as usize).div_ceil(7), "{v}");
                let decoded = bytes.iter().rev().fold(0u64, |acc, b| acc << 7 | u64::from(b & 0x7f));
                assert_eq!(decoded, v);
                assert!(
                    bytes[..bytes.len() - 1].iter().all(|b| b & 0x80 != 0) && bytes[bytes.len() - 1] < 0x80
                );
            }
        }
    }

    #[test]
    fn negative_signed_integers_are_ten_byte_twos_complement_varints_not_zigzag() {
        // Field 4 (DebugAnnotation.int_value), -1: key 0x20, then 2^64 - 1.
        let minus_one = enc(|b| b.int(4, -1));
        assert_eq!(minus_one, [0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        assert_eq!(enc(|b| b.int(4, -5))[1..], enc(|b| b.varint((-5i64) as u64))[..]);
        assert_eq!(enc(|b| b.int(4, i64::MIN)).len(), 11);
        // Zigzag would have encoded -1 as 1 and 1 as 2.
        assert_eq!(enc(|b| b.int(4, 1)), [0x20, 0x01]);
        // An int32 (ProcessDescriptor.pid) is sign-extended: -2 is ten bytes too.
        assert_eq!(enc(|b| b.int(1, i64::from(-2i32))).len(), 11);
    }

    #[test]
    fn keys_hold_the_field_number_and_the_wire_type() {
        assert_eq!(enc(|b| b.tag(1, LEN)), [0x0a]);
        assert_eq!(enc(|b| b.tag(8, VARINT)), [0x40]);
        assert_eq!(enc(|b| b.tag(5, I64)), [0x29]);
        // Field 16 needs a two-byte key, field 60 (TracePacket.track_descriptor) too.
        assert_eq!(enc(|b| b.tag(16, VARINT)), [0x80, 0x01]);
        assert_eq!(enc(|b| b.tag(60, LEN)), [0xe2, 0x03]);
    }

    #[test]
    fn scalar_fields_are_a_key_then_the_value() {
        assert_eq!(enc(|b| b.uint(10, 1)), [0x50, 0x01]);
        assert_eq!(enc(|b| b.boolean(2, true)), [0x10, 0x01]);
        assert_eq!(enc(|b| b.boolean(2, false)), [0x10, 0x00]);
        assert_eq!(enc(|b| b.double(5, 2.5)), [0x29, 0, 0, 0, 0, 0, 0, 0x04, 0x40]);
        assert_eq!(enc(|b| b.bytes(2, b"hi")), [0x12, 0x02, b'h', b'i']);
        assert_eq!(enc(|b| b.bytes(2, b"")), [0x12, 0x00]);
    }

    #[test]
    fn nested_messages_get_a_minimal_length_prefix_whatever_their_size() {
        for len in [0usize, 1, 127, 128, 300, 16_383, 16_384, 70_000] {
            let got = enc(|b| {
                b.put(&[0xaa]);
                let start = b.begin(3);
                b.put(&vec![0x55; len]);
                b.end(start);
            });
            let mut want = Enc::default();
            want.put(&[0xaa, 0x1a]);
            want.varint(len as u64);
            want.put(&vec![0x55; len]);
            assert_eq!(got, want.as_slice(), "body of {len} bytes");
        }
    }

    #[test]
    fn nested_messages_nest() {
        let b = enc(|b| {
            let outer = b.begin(1);
            let inner = b.begin(2);
            b.bytes(1, &[7; 200]);
            b.end(inner);
            b.uint(3, 1);
            b.end(outer);
        });
        // outer: key, len(2 + 203 + 2 = 208 -> 2 bytes); inner: key, len(203 -> 2 bytes).
        assert_eq!(&b[..6], &[0x0a, 0xd0, 0x01, 0x12, 0xcb, 0x01]);
        assert_eq!(b.len(), 3 + 208);
        assert_eq!(&b[b.len() - 2..], &[0x18, 0x01]);
    }

    #[test]
    fn the_buffer_grows_as_needed_and_clear_keeps_nothing() {
        let mut b = Enc::with_capacity(4);
        for i in 0..1000u64 {
            b.uint(1, (1 << 48) + i);
        }
        b.bytes(2, &[1; 5000]);
        assert_eq!(b.len(), 1000 * 8 + 3 + 5000);
        b.clear();
        assert!(b.is_empty());
        b.uint(1, 1);
        assert_eq!(b.as_slice(), [0x08, 0x01]);
    }

    #[test]
    fn short_puts_write_what_put_writes_at_every_length() {
        let bytes: Vec<u8> = (1..=40).collect();
        for n in 0..=bytes.len() {
            let short = enc(|b| {
                b.uint(1, 1);
                b.put_short(&bytes[..n]);
                b.uint(2, 2);
            });
            let long = enc(|b| {
                b.uint(1, 1);
                b.put(&bytes[..n]);
                b.uint(2, 2);
            });
            assert_eq!(short, long, "{n} bytes");
        }
    }
}
