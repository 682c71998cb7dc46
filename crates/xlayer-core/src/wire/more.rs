//! MORE's packets (Chachulski, Jennings, Katti, Katabi, "Trading structure for randomness in
//! wireless opportunistic routing", SIGCOMM 2007): a coded data packet carries its batch and its
//! code vector — the coefficients of the linear combination of the batch's native packets it
//! holds — and the flow's forwarder list with each forwarder's TX credit; a batch ACK names the
//! flow and the batch the destination decoded. The state machines that make and read them are in
//! `crate::xl::more`; the coding arithmetic is `crate::net::coding`.
//!
//! Sizes on the wire, over IPv4 + UDP (28 bytes; the DiffQ document ran MORE as a user-space
//! program over UDP, §6.1): a coded packet's MORE header is [`CODED_BASE_BYTES`] (type, batch
//! size, forwarder count, reserved, flow id, batch number), `K` bytes of code vector (one
//! GF(2^8) coefficient per native packet) and [`FORWARDER_BYTES`] per forwarder (its address and
//! its TX credit in fixed point); a batch ACK is [`ACK_BYTES`] in all. The byte layout is
//! xlayer's: MORE's paper gives the fields, not their widths.

/// Native packets per batch at most: MORE's K = 32 (§6.1, and the DiffQ document's batches).
pub const MAX_BATCH: usize = 32;

/// A code vector: the coefficients over the batch's native packets (the first `K` are used).
pub type CodeVector = [u8; MAX_BATCH];

/// MORE header of a coded packet without its code vector and forwarder list: type (1), batch
/// size (1), forwarder count (1), reserved (1), flow id (4), batch number (4).
pub const CODED_BASE_BYTES: u32 = 12;

/// One forwarder list entry: the forwarder's address (4) and its TX credit (2, fixed point).
pub const FORWARDER_BYTES: u32 = 6;

/// A batch ACK at the network layer: IPv4 (20) + UDP (8) + type (1), reserved (3), flow id (4),
/// batch number (4).
pub const ACK_BYTES: u32 = 40;

/// The MORE header of a coded data packet as the simulator carries it: the batch and the real
/// code vector (so rank and innovation are exact at every receiver). The forwarder list stays
/// in the flow's state at its source, published for the batch (`crate::xl::more`); its bytes are
/// counted in the packet's header length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoreCoded {
    pub batch: u32,
    pub coeffs: CodeVector,
}

/// Header bytes of a coded packet of a batch of `k` native packets with `forwarders`
/// forwarders, IPv4 and UDP included.
pub fn coded_header_bytes(k: usize, forwarders: usize) -> u32 {
    28 + CODED_BASE_BYTES + k as u32 + FORWARDER_BYTES * forwarders as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_batch_header_with_ten_forwarders() {
        // 28 (IPv4 + UDP) + 12 + 32 coefficients + 10 · 6.
        assert_eq!(coded_header_bytes(32, 10), 132);
    }
}
