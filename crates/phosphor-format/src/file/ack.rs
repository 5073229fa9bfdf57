//! What a recording server (`phosphor record`) sends back on a streamed connection.
//!
//! ```text
//! ack     u64: the bytes of the stream its file holds (flushed), never u64::MAX
//! end     u64::MAX, then len u32 and len bytes of UTF-8 (at most MAX_END_REASON): why the
//!         server refuses or ends the connection; nothing follows
//! ```
//!
//! A client counts what the server acknowledged as delivered, and tells an `end` (too many
//! connections, a limit passed, an idle peer) from a connection that broke.

/// The value that starts an `end` message instead of an acknowledgement.
pub const ACK_END: u64 = u64::MAX;

/// The longest reason an `end` message carries, in bytes.
pub const MAX_END_REASON: usize = 1024;

/// An acknowledgement of `bytes`.
pub fn encode_ack(bytes: u64) -> [u8; 8] {
    debug_assert_ne!(bytes, ACK_END);
    bytes.to_le_bytes()
}

/// An `end` message saying `reason`, cut to [`MAX_END_REASON`] bytes at a character boundary.
pub fn encode_end(reason: &str) -> Vec<u8> {
    let mut cut = reason.len().min(MAX_END_REASON);
    while !reason.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut out = Vec::with_capacity(12 + cut);
    out.extend_from_slice(&ACK_END.to_le_bytes());
    out.extend_from_slice(&(cut as u32).to_le_bytes());
    out.extend_from_slice(&reason.as_bytes()[..cut]);
    out
}

/// A message from the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ack {
    /// The file holds this many bytes of the stream.
    Bytes(u64),
    /// The server refuses or ends the connection, for this reason.
    End(String),
}

/// Takes the server's bytes as they arrive and gives back its whole messages.
#[derive(Clone, Debug, Default)]
pub struct AckReader {
    buf: Vec<u8>,
    ended: bool,
}

impl AckReader {
    /// Adds bytes that arrived.
    pub fn push(&mut self, bytes: &[u8]) {
        if !self.ended {
            self.buf.extend_from_slice(bytes);
        }
    }

    /// The next whole message, if one has arrived. After an `End`, nothing more.
    pub fn next_ack(&mut self) -> Option<Ack> {
        if self.ended || self.buf.len() < 8 {
            return None;
        }
        let v = u64::from_le_bytes(self.buf[..8].try_into().expect("8 bytes"));
        if v != ACK_END {
            self.buf.drain(..8);
            return Some(Ack::Bytes(v));
        }
        if self.buf.len() < 12 {
            return None;
        }
        let len =
            (u32::from_le_bytes(self.buf[8..12].try_into().expect("4 bytes")) as usize).min(MAX_END_REASON);
        if self.buf.len() < 12 + len {
            return None;
        }
        let reason = String::from_utf8_lossy(&self.buf[12..12 + len]).into_owned();
        self.ended = true;
        self.buf = Vec::new();
        Some(Ack::End(reason))
    }

    /// What the server was saying when the connection closed: the start of an `end` message whose
    /// reason did not all arrive, if that is what is left.
    pub fn cut_end(&self) -> Option<String> {
        let start = self.buf.get(..8)?;
        (u64::from_le_bytes(start.try_into().expect("8 bytes")) == ACK_END)
            .then(|| String::from_utf8_lossy(self.buf.get(12..).unwrap_or(&[])).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acks_and_an_end_read_back_whatever_the_pieces() {
        let mut stream = Vec::new();
        stream.extend_from_slice(&encode_ack(100));
        stream.extend_from_slice(&encode_ack(4096));
        stream.extend_from_slice(&encode_end("too many connections (256, --max-connections)"));
        stream.extend_from_slice(&encode_ack(5)); // nothing after an end counts
        for piece in [1, 3, 7, 13, stream.len()] {
            let mut r = AckReader::default();
            let mut got = Vec::new();
            for p in stream.chunks(piece) {
                r.push(p);
                while let Some(a) = r.next_ack() {
                    got.push(a);
                }
            }
            assert_eq!(
                got,
                [
                    Ack::Bytes(100),
                    Ack::Bytes(4096),
                    Ack::End("too many connections (256, --max-connections)".into())
                ],
                "in pieces of {piece}"
            );
        }
    }

    #[test]
    fn a_long_reason_is_cut_at_a_character_and_a_cut_end_is_still_an_end() {
        let long = "é".repeat(MAX_END_REASON);
        let m = encode_end(&long);
        assert!(m.len() <= 12 + MAX_END_REASON);
        let mut r = AckReader::default();
        r.push(&m);
        let Some(Ack::End(reason)) = r.next_ack() else { panic!("no end") };
        assert!(reason.chars().all(|c| c == 'é') && reason.len() <= MAX_END_REASON);
        let mut r = AckReader::default();
        r.push(&encode_end("the server is full")[..15]);
        assert_eq!(r.next_ack(), None);
        assert_eq!(r.cut_end().as_deref(), Some("the"));
        let mut r = AckReader::default();
        r.push(&encode_ack(7)[..5]);
        assert_eq!(r.cut_end(), None, "part of an acknowledgement is no end");
    }
}
