//! Packets whose interned entries are too long to copy into them: written out in pieces.

use std::io::{self, Write};

use super::packets::{KEEP_BUF, KEEP_PENDING};
use super::pb;
use super::proto::{PACKET_INTERNED_DATA, TRACE_PACKET};
use super::Exporter;

impl<W: Write> Exporter<W> {
    /// [`finish_packet`](Self::finish_packet) for interned entries too long to copy into the
    /// packet (a name of megabytes): the packet is written out in pieces, its own fields from the
    /// packet buffer and the entries from where they were encoded, so the name is held twice (the
    /// reader's table and the entry), not three times.
    #[cold]
    #[inline(never)]
    pub(super) fn finish_packet_streamed(&mut self) -> io::Result<()> {
        let start = self.packet;
        // `begin` wrote the packet's one-byte key (field 1) and a one-byte length placeholder.
        debug_assert!(TRACE_PACKET < 16 && start >= 2);
        let fields = &self.buf.as_slice()[start..];
        let entries = self.interner.pending.as_slice();
        let mut key = [0u8; 20];
        let n = pb::write_varint(&mut key, u64::from(PACKET_INTERNED_DATA << 3 | pb::LEN));
        let n = n + pb::write_varint(&mut key[n..], entries.len() as u64);
        let mut head = [0u8; 11];
        head[0] = (TRACE_PACKET << 3 | pb::LEN) as u8;
        let h = 1 + pb::write_varint(&mut head[1..], (fields.len() + n + entries.len()) as u64);
        self.out.write_all(&self.buf.as_slice()[..start - 2])?;
        self.out.write_all(&head[..h])?;
        self.out.write_all(fields)?;
        self.out.write_all(&key[..n])?;
        self.out.write_all(entries)?;
        self.buf.clear_shrinking(KEEP_BUF);
        self.interner.pending.clear_shrinking(KEEP_PENDING);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use phosphor_format::file::{CallsiteInfo, Reader, Trailer, Writer};
    use phosphor_format::Phase;

    use super::super::checker::{check, slice, thread};
    use super::super::packets::STREAM_INTERNED_AT as AT;
    use crate::test_files::{clock, header, slice as complete};

    fn callsite(id: u32, name: &str) -> CallsiteInfo<&str> {
        CallsiteInfo {
            id,
            category: "c",
            name,
            phase: Phase::Complete,
            arg_names: ["", ""],
            file: "streamed.rs",
            line: id,
            name_hash: 0,
            level: None,
            dynamic_name: false,
            flow: false,
        }
    }

    #[test]
    fn a_name_past_the_streaming_size_decodes_as_written_between_ordinary_packets() {
        let long = format!("long-{}", "n".repeat(AT + 10));
        let mut w = Writer::new(Vec::new(), &header(clock(1.0))).unwrap();
        w.write_callsites(&[callsite(16, "short"), callsite(17, &long)]).unwrap();
        let records = [complete(16, 0, 5), complete(17, 10, 5), complete(16, 20, 5), complete(17, 30, 5)];
        w.write_chunk(1, 0, &records, |_, _| "").unwrap();
        w.write_thread_names([(1, "main")]).unwrap();
        let bytes = w.finish(&Trailer::default()).unwrap();
        let mut out = Vec::new();
        crate::perfetto::write_perfetto(Reader::new(bytes.as_slice()).unwrap(), &mut out).unwrap();
        let doc = check(&out);
        let main = thread(&doc, 1);
        assert_eq!(slice(main, "short")["dur"], 5);
        assert_eq!(slice(main, &long)["dur"], 5);
        let names: Vec<&str> =
            main["slices"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert_eq!(
            names.len(),
            4,
            "every slice, in order: {:?}",
            names.iter().map(|n| &n[..n.len().min(8)]).collect::<Vec<_>>()
        );
    }
}
