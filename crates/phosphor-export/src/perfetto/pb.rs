//! The protobuf wire format, as much of it as the Perfetto exporter writes: varints, tags, and
//! length-delimited fields, appended to a `Vec<u8>`.
//!
//! Encoding follows <https://protobuf.dev/programming-guides/encoding/>. Integers are plain varints
//! (`int32`/`int64` negatives are sign-extended to ten bytes; no field written here is `sint`, so
//! there is no zigzag). Every length is the minimal varint, so the output is canonical: a parser
//! re-serialising it gets the same number of bytes, which the tests check.
//!
//! A nested message is written in place: [`begin`] leaves one byte for its length, and [`end`]
//! fills it in, moving the body along in the rare case that the length needs more than one byte
//! (a message of 128 bytes or more). That spares an intermediate buffer per message.

/// Wire type of varint fields (integers, bools, enums).
pub const VARINT: u32 = 0;
/// Wire type of 64-bit fixed fields (`double`, `fixed64`).
pub const I64: u32 = 1;
/// Wire type of length-delimited fields (strings, bytes, messages).
pub const LEN: u32 = 2;

/// Appends `v` as a varint: seven bits per byte, least significant first.
#[inline]
pub fn varint(buf: &mut Vec<u8>, v: u64) {
    let (bytes, n) = encode_varint(v);
    buf.extend_from_slice(&bytes[..n]);
}

/// `v` as a varint: the bytes, and how many of them there are.
#[inline]
fn encode_varint(mut v: u64) -> ([u8; 10], usize) {
    let mut bytes = [0u8; 10];
    let mut n = 0;
    while v >= 0x80 {
        bytes[n] = v as u8 | 0x80;
        v >>= 7;
        n += 1;
    }
    bytes[n] = v as u8;
    (bytes, n + 1)
}

/// The key of length-delimited `field` (at most 15, a one-byte key) and `len`, for a message
/// encoded elsewhere that is to follow them: the bytes, and how many of them there are.
#[inline]
pub fn key_and_len(field: u32, len: u64) -> ([u8; 11], usize) {
    debug_assert!((1..16).contains(&field));
    let mut out = [0u8; 11];
    out[0] = (field << 3 | LEN) as u8;
    let (bytes, n) = encode_varint(len);
    out[1..=n].copy_from_slice(&bytes[..n]);
    (out, n + 1)
}

/// Bytes of `v` as a varint.
#[inline]
pub fn varint_len(v: u64) -> usize {
    // 1 + floor(log2(v) / 7) without a loop; 0 takes one byte.
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Appends a field key: the field number and the wire type.
#[inline]
pub fn tag(buf: &mut Vec<u8>, field: u32, wire_type: u32) {
    varint(buf, u64::from(field << 3 | wire_type));
}

/// An unsigned integer field (`uint32`, `uint64`, enums).
#[inline]
pub fn uint(buf: &mut Vec<u8>, field: u32, v: u64) {
    tag(buf, field, VARINT);
    varint(buf, v);
}

/// A signed integer field (`int32`, `int64`): two's complement, so a negative value takes ten
/// bytes (an `int32` is sign-extended to 64 bits first, as the encoding requires).
#[inline]
pub fn int(buf: &mut Vec<u8>, field: u32, v: i64) {
    uint(buf, field, v as u64);
}

/// A `bool` field.
#[inline]
pub fn boolean(buf: &mut Vec<u8>, field: u32, v: bool) {
    uint(buf, field, u64::from(v));
}

/// A `double` field: the IEEE 754 bits, little-endian.
#[inline]
pub fn double(buf: &mut Vec<u8>, field: u32, v: f64) {
    tag(buf, field, I64);
    buf.extend_from_slice(&v.to_bits().to_le_bytes());
}

/// A `string` or `bytes` field.
#[inline]
pub fn bytes(buf: &mut Vec<u8>, field: u32, v: &[u8]) {
    tag(buf, field, LEN);
    varint(buf, v.len() as u64);
    buf.extend_from_slice(v);
}

/// Opens a nested message in `field`; returns where its body starts, for [`end`].
#[inline]
pub fn begin(buf: &mut Vec<u8>, field: u32) -> usize {
    tag(buf, field, LEN);
    buf.push(0);
    buf.len()
}

/// Closes the nested message whose body starts at `start`, writing its length.
#[inline]
pub fn end(buf: &mut Vec<u8>, start: usize) {
    let len = buf.len() - start;
    if len < 0x80 {
        buf[start - 1] = len as u8;
    } else {
        widen(buf, start, len);
    }
}

/// The length needs more than the one byte [`begin`] left: move the body up to make room.
#[cold]
#[inline(never)]
fn widen(buf: &mut Vec<u8>, start: usize, len: usize) {
    let n = varint_len(len as u64);
    buf.resize(buf.len() + n - 1, 0);
    buf.copy_within(start..start + len, start + n - 1);
    let (prefix, _) = encode_varint(len as u64);
    buf[start - 1..start - 1 + n].copy_from_slice(&prefix[..n]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut b = Vec::new();
        f(&mut b);
        b
    }

    #[test]
    fn varints_take_seven_bits_per_byte_least_significant_first() {
        assert_eq!(enc(|b| varint(b, 0)), [0x00]);
        assert_eq!(enc(|b| varint(b, 1)), [0x01]);
        assert_eq!(enc(|b| varint(b, 127)), [0x7f]);
        assert_eq!(enc(|b| varint(b, 128)), [0x80, 0x01]);
        assert_eq!(enc(|b| varint(b, 300)), [0xac, 0x02]);
        assert_eq!(enc(|b| varint(b, 16_383)), [0xff, 0x7f]);
        assert_eq!(enc(|b| varint(b, 16_384)), [0x80, 0x80, 0x01]);
        assert_eq!(
            enc(|b| varint(b, u64::MAX)),
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
    }

    #[test]
    fn varint_len_matches_the_encoding_at_every_boundary() {
        for shift in 0..64 {
            for v in [(1u64 << shift) - 1, 1 << shift, (1 << shift) + 1] {
                assert_eq!(varint_len(v), enc(|b| varint(b, v)).len(), "{v}");
            }
        }
        assert_eq!(varint_len(0), 1);
        assert_eq!(varint_len(u64::MAX), 10);
    }

    #[test]
    fn negative_signed_integers_are_ten_byte_twos_complement_varints_not_zigzag() {
        // Field 4 (DebugAnnotation.int_value), -1: key 0x20, then 2^64 - 1.
        let minus_one = enc(|b| int(b, 4, -1));
        assert_eq!(minus_one, [0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        assert_eq!(enc(|b| int(b, 4, -5))[1..], enc(|b| varint(b, (-5i64) as u64))[..]);
        assert_eq!(enc(|b| int(b, 4, i64::MIN)).len(), 11);
        // Zigzag would have encoded -1 as 1 and 1 as 2.
        assert_eq!(enc(|b| int(b, 4, 1)), [0x20, 0x01]);
        // An int32 (ProcessDescriptor.pid) is sign-extended: -2 is ten bytes too.
        assert_eq!(enc(|b| int(b, 1, i64::from(-2i32))).len(), 11);
    }

    #[test]
    fn keys_hold_the_field_number_and_the_wire_type() {
        assert_eq!(enc(|b| tag(b, 1, LEN)), [0x0a]);
        assert_eq!(enc(|b| tag(b, 8, VARINT)), [0x40]);
        assert_eq!(enc(|b| tag(b, 5, I64)), [0x29]);
        // Field 16 needs a two-byte key, field 60 (TracePacket.track_descriptor) too.
        assert_eq!(enc(|b| tag(b, 16, VARINT)), [0x80, 0x01]);
        assert_eq!(enc(|b| tag(b, 60, LEN)), [0xe2, 0x03]);
    }

    #[test]
    fn a_key_and_length_prefix_for_a_message_written_apart_is_the_same_as_a_nested_one() {
        for len in [0u64, 5, 127, 128, 1 << 20, (1 << 35) - 1] {
            let (bytes, n) = key_and_len(1, len);
            let mut want = vec![0x0a];
            varint(&mut want, len);
            assert_eq!(&bytes[..n], &want[..], "{len}");
        }
    }

    #[test]
    fn scalar_fields_are_a_key_then_the_value() {
        assert_eq!(enc(|b| uint(b, 10, 1)), [0x50, 0x01]);
        assert_eq!(enc(|b| boolean(b, 2, true)), [0x10, 0x01]);
        assert_eq!(enc(|b| boolean(b, 2, false)), [0x10, 0x00]);
        assert_eq!(enc(|b| double(b, 5, 2.5)), [0x29, 0, 0, 0, 0, 0, 0, 0x04, 0x40]);
        assert_eq!(enc(|b| bytes(b, 2, b"hi")), [0x12, 0x02, b'h', b'i']);
        assert_eq!(enc(|b| bytes(b, 2, b"")), [0x12, 0x00]);
    }

    #[test]
    fn nested_messages_get_a_minimal_length_prefix_whatever_their_size() {
        for len in [0usize, 1, 127, 128, 300, 16_383, 16_384, 70_000] {
            let mut b = vec![0xaa];
            let start = begin(&mut b, 3);
            b.extend(std::iter::repeat_n(0x55, len));
            end(&mut b, start);
            let mut want = vec![0xaa, 0x1a];
            varint(&mut want, len as u64);
            want.extend(std::iter::repeat_n(0x55, len));
            assert_eq!(b, want, "body of {len} bytes");
        }
    }

    #[test]
    fn nested_messages_nest() {
        let mut b = Vec::new();
        let outer = begin(&mut b, 1);
        let inner = begin(&mut b, 2);
        bytes(&mut b, 1, &[7; 200]);
        end(&mut b, inner);
        uint(&mut b, 3, 1);
        end(&mut b, outer);
        // outer: key, len(2 + 203 + 2 = 208 -> 2 bytes); inner: key, len(203 -> 2 bytes).
        assert_eq!(&b[..6], &[0x0a, 0xd0, 0x01, 0x12, 0xcb, 0x01]);
        assert_eq!(b.len(), 3 + 208);
        assert_eq!(&b[b.len() - 2..], &[0x18, 0x01]);
    }
}
