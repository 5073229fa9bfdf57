//! Deterministic span and trace ids: the same file converted twice gives the same ids.
//!
//! A file's seed mixes what tells its recording apart from others (pid, boot id, the wall-clock
//! origin, the process name); a span's id mixes the seed with the span's number in the file (spans
//! are numbered as they are made, in file order), and a trace's id mixes the seed with its root's
//! number. The mixer is splitmix64's finaliser, a bijection on `u64`: distinct numbers under one
//! seed give distinct span ids.

use phosphor_format::file::Header;

/// The splitmix64 finaliser: a bijection of `u64` that spreads every input bit.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The id source of one file.
#[derive(Clone, Copy, Debug)]
pub struct Ids {
    seed: u64,
}

impl Ids {
    /// The ids of the file whose header is `header`.
    pub fn new(header: &Header) -> Ids {
        let mut seed = mix(u64::from(header.pid) ^ 0x5048_4f53_5048_4f52);
        for b in header.boot_id.iter().flatten() {
            seed = mix(seed ^ u64::from(*b));
        }
        seed = mix(seed ^ header.clock.origin_wall_ns);
        for b in header.process_name.bytes() {
            seed = mix(seed ^ u64::from(b));
        }
        Ids { seed }
    }

    /// The id of span number `n`: never zero (OTLP's "no span").
    pub fn span(&self, n: u64) -> [u8; 8] {
        let id = mix(n ^ self.seed);
        let id = if id == 0 { 1 } else { id };
        id.to_be_bytes()
    }

    /// The id of the trace whose root is span number `n`: never zero.
    pub fn trace(&self, n: u64) -> [u8; 16] {
        let hi = mix(n ^ self.seed ^ 0x7472_6163_6500_0000);
        let lo = mix(hi ^ n);
        let mut id = [0; 16];
        id[..8].copy_from_slice(&hi.to_be_bytes());
        id[8..].copy_from_slice(&lo.to_be_bytes());
        if id == [0; 16] {
            id[15] = 1;
        }
        id
    }
}
