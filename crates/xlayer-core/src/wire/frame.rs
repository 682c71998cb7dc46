//! 802.11 MAC frames as the simulator carries them, and their wire form for pcap traces.
//!
//! Sizes (802.11-2016 §9.3): DATA header 24 bytes + FCS 4; ACK and CTS 14 bytes; RTS 20 bytes.
//! The MSDU of a data frame carries LLC/SNAP (8 bytes), then the network packet.

use crate::sim::SimTime;

pub use super::BROADCAST;
pub const DATA_OVERHEAD_BYTES: u32 = 24 + 4;
pub const ACK_BYTES: u32 = 14;
pub const CTS_BYTES: u32 = 14;
pub const RTS_BYTES: u32 = 20;
pub const LLC_SNAP_BYTES: u32 = 8;
/// No packet attached (control frames).
pub const NO_PACKET: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    Data,
    Ack,
    Rts,
    Cts,
    /// ZMAC+ beacon: a short burst announcing that the sender contends at a priority level
    /// (DPCLO §IV-F, Fig. 1). Carries nothing; `bytes` is its (documented) PSDU length.
    Beacon,
    /// Z-MAC slot-assignment announcement of the set-up phase (`mac::drand`); broadcast.
    ZmacState,
    /// Z-MAC explicit contention notification (ECN); broadcast.
    ZmacEcn,
}

/// Z-MAC control payloads (network byte order on the wire): a STATE announcement carries a
/// 10-byte header (type, node id, priority, slot, frame size, entry count) and 8 bytes per
/// listed node (id, priority, slot, frame size, version); an ECN carries its originator's id.
pub const ZMAC_STATE_HEADER_BYTES: u32 = 10;
pub const ZMAC_STATE_ENTRY_BYTES: u32 = 8;
pub const ZMAC_ECN_PAYLOAD_BYTES: u32 = 4;

#[derive(Debug, Clone, Copy)]
pub struct Frame {
    pub kind: FrameKind,
    pub src: u32,
    pub dst: u32,
    /// The Duration/ID field: how long the medium stays reserved after this frame (NAV).
    pub duration: SimTime,
    pub seq: u16,
    /// Traffic identifier: the sender's priority level (sequence numbers count per TID).
    pub tid: u8,
    pub retry: bool,
    /// Arena handle of the carried packet, or [`NO_PACKET`].
    pub packet: u32,
    /// PSDU length in bytes (MAC header, body and FCS).
    pub bytes: u32,
    pub rate_mbps: f64,
    /// The forward error correction of the payload when it is not the standard's code for
    /// `rate_mbps`: a flow's own code rate over 802.11a BPSK (`phy::fec::CodeRate::id`), or 0.
    pub code: u8,
}

impl Frame {
    /// A control frame (RTS, CTS or ACK) of its standard length, carrying no packet.
    pub fn control(
        kind: FrameKind,
        src: u32,
        dst: u32,
        duration: SimTime,
        rate_mbps: f64,
    ) -> Frame {
        let bytes = match kind {
            FrameKind::Rts => RTS_BYTES,
            FrameKind::Cts => CTS_BYTES,
            FrameKind::Ack => ACK_BYTES,
            _ => panic!("Frame::control builds RTS, CTS and ACK frames only"),
        };
        Frame {
            kind,
            src,
            dst,
            duration,
            seq: 0,
            tid: 0,
            retry: false,
            packet: NO_PACKET,
            bytes,
            rate_mbps,
            code: 0,
        }
    }

    pub fn is_broadcast(&self) -> bool {
        self.dst == BROADCAST
    }

    /// Emits the frame as 802.11 bytes (MAC header, LLC/SNAP, `body` as the network packet, and
    /// a zero FCS placeholder replaced by the real CRC-32), for pcap link type 105.
    pub fn emit(&self, body: &[u8], out: &mut Vec<u8>) {
        let mac = |id: u32| -> [u8; 6] {
            if id == BROADCAST {
                [0xff; 6]
            } else {
                let b = id.to_be_bytes();
                [0x02, 0x00, b[0], b[1], b[2], b[3]]
            }
        };
        let dur_us = (self.duration.ns() / 1000).min(32767) as u16;
        let start = out.len();
        match self.kind {
            FrameKind::Data => {
                let fc: u16 = 0x0008 | if self.retry { 0x0800 } else { 0 };
                out.extend_from_slice(&fc.to_le_bytes());
                out.extend_from_slice(&dur_us.to_le_bytes());
                out.extend_from_slice(&mac(self.dst));
                out.extend_from_slice(&mac(self.src));
                out.extend_from_slice(&mac(BROADCAST)); // BSSID: ad hoc wildcard
                out.extend_from_slice(&((self.seq & 0x0fff) << 4).to_le_bytes());
                out.extend_from_slice(&[0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00]); // LLC/SNAP, IPv4
                out.extend_from_slice(body);
            }
            FrameKind::Ack | FrameKind::Cts => {
                let fc: u16 = if self.kind == FrameKind::Ack {
                    0x00d4
                } else {
                    0x00c4
                };
                out.extend_from_slice(&fc.to_le_bytes());
                out.extend_from_slice(&dur_us.to_le_bytes());
                out.extend_from_slice(&mac(self.dst));
            }
            FrameKind::Rts => {
                out.extend_from_slice(&0x00b4u16.to_le_bytes());
                out.extend_from_slice(&dur_us.to_le_bytes());
                out.extend_from_slice(&mac(self.dst));
                out.extend_from_slice(&mac(self.src));
            }
            FrameKind::Beacon | FrameKind::ZmacState | FrameKind::ZmacEcn => {
                // Management frames of type Action (0x00d0) to broadcast; the Z-MAC payload is
                // not serialised, only its length (zero bytes) so that pcap lengths match.
                out.extend_from_slice(&0x00d0u16.to_le_bytes());
                out.extend_from_slice(&dur_us.to_le_bytes());
                out.extend_from_slice(&mac(self.dst));
                out.extend_from_slice(&mac(self.src));
                let pad = (self.bytes as usize).saturating_sub(out.len() - start + 4);
                out.resize(out.len() + pad, 0);
            }
        }
        let crc = crc32(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
    }
}

/// IEEE 802.3 CRC-32 (the 802.11 FCS).
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_of_check_string() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn emitted_ack_is_14_bytes_and_data_matches_psdu_length() {
        let mut out = vec![];
        let ack = Frame {
            kind: FrameKind::Ack,
            src: 1,
            dst: 2,
            duration: SimTime::ZERO,
            seq: 0,
            tid: 0,
            retry: false,
            packet: NO_PACKET,
            bytes: ACK_BYTES,
            rate_mbps: 1.0,
            code: 0,
        };
        ack.emit(&[], &mut out);
        assert_eq!(out.len() as u32, ACK_BYTES);
        let body = vec![0u8; 1028];
        let data = Frame {
            kind: FrameKind::Data,
            bytes: DATA_OVERHEAD_BYTES + LLC_SNAP_BYTES + 1028,
            ..ack
        };
        let mut out = vec![];
        data.emit(&body, &mut out);
        assert_eq!(out.len() as u32, data.bytes);
    }
}
