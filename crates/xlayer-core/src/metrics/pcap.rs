//! A pcap writer (libpcap format, link type 105 `LINKTYPE_IEEE802_11`): plain 802.11 frames
//! with their FCS, one file per node, readable by Wireshark and tshark.
//!
//! The core does no file I/O: it appends records to an in-memory buffer and the caller writes
//! the bytes where it likes.

use crate::sim::SimTime;

pub const LINKTYPE_IEEE802_11: u32 = 105;

#[derive(Debug)]
pub struct PcapBuffer {
    pub bytes: Vec<u8>,
}

impl Default for PcapBuffer {
    fn default() -> Self {
        Self::new()
    }
}

impl PcapBuffer {
    pub fn new() -> PcapBuffer {
        let mut bytes = Vec::with_capacity(4096);
        bytes.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes()); // nanosecond-resolution magic
        bytes.extend_from_slice(&2u16.to_le_bytes());
        bytes.extend_from_slice(&4u16.to_le_bytes());
        bytes.extend_from_slice(&0i32.to_le_bytes());
        bytes.extend_from_slice(&0u32.to_le_bytes());
        bytes.extend_from_slice(&65535u32.to_le_bytes());
        bytes.extend_from_slice(&LINKTYPE_IEEE802_11.to_le_bytes());
        PcapBuffer { bytes }
    }

    pub fn record(&mut self, t: SimTime, frame: &[u8]) {
        let ns = t.ns();
        self.bytes
            .extend_from_slice(&((ns / 1_000_000_000) as u32).to_le_bytes());
        self.bytes
            .extend_from_slice(&((ns % 1_000_000_000) as u32).to_le_bytes());
        self.bytes
            .extend_from_slice(&(frame.len() as u32).to_le_bytes());
        self.bytes
            .extend_from_slice(&(frame.len() as u32).to_le_bytes());
        self.bytes.extend_from_slice(frame);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_24_bytes_and_records_carry_length() {
        let mut p = PcapBuffer::new();
        assert_eq!(p.bytes.len(), 24);
        p.record(SimTime(1_500_000_000), &[1, 2, 3]);
        assert_eq!(p.bytes.len(), 24 + 16 + 3);
        assert_eq!(&p.bytes[24..28], &1u32.to_le_bytes());
        assert_eq!(&p.bytes[28..32], &500_000_000u32.to_le_bytes());
    }
}
