//! Little-endian field access for block bodies, with every read bounds-checked.
//!
//! [`Body`] walks a block body that is already in memory; running off its end is a malformed
//! block (the block's length said the bytes were there), reported at the field's file offset.

use super::error::Error;

/// A cursor over one block body.
pub(crate) struct Body<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// File offset of `bytes[0]`.
    base: u64,
    what: &'static str,
}

impl<'a> Body<'a> {
    pub(crate) fn new(bytes: &'a [u8], base: u64, what: &'static str) -> Body<'a> {
        Body { bytes, pos: 0, base, what }
    }

    /// File offset of the next byte.
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        if n > self.remaining() {
            return Err(Error::malformed(
                self.what,
                format!("needs {n} more bytes, the block has {}", self.remaining()),
                self.offset(),
            ));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, Error> {
        Ok(self.take(1)?[0])
    }

    pub(crate) fn u32(&mut self) -> Result<u32, Error> {
        let mut b = [0; 4];
        b.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(b))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, Error> {
        let mut b = [0; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(b))
    }

    /// A `u32` length followed by that many bytes of UTF-8.
    pub(crate) fn str(&mut self) -> Result<&'a str, Error> {
        let at = self.offset();
        let len = self.u32()? as usize;
        let bytes = self.take(len)?;
        std::str::from_utf8(bytes).map_err(|e| Error::malformed(self.what, format!("string: {e}"), at))
    }

    /// Fails unless every byte was read.
    pub(crate) fn finish(&self) -> Result<(), Error> {
        if self.remaining() != 0 {
            return Err(Error::malformed(
                self.what,
                format!("{} bytes left over at the end", self.remaining()),
                self.offset(),
            ));
        }
        Ok(())
    }
}

/// Appends a `u32` length and the bytes of `s`.
pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}
