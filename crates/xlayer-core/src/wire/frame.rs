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
    /// the FCS, the CRC-32 of what precedes it), for pcap traces.
    ///
    /// With `qos` (an EDCA MAC of more than one level), a data frame is a QoS Data frame
    /// (802.11-2016 §9.3.2.1, subtype 8) whose QoS Control field (§9.2.4.5) carries the frame's
    /// level as its TID and the Ack Policy Normal Ack, or No Ack when broadcast (nothing
    /// acknowledges it). The simulator charges every data frame the same 28 bytes of MAC header
    /// and FCS ([`DATA_OVERHEAD_BYTES`]) of airtime, so a QoS Data frame in a capture is 2 bytes
    /// longer than the PSDU the simulator sent.
    pub fn emit(&self, body: &[u8], qos: bool, out: &mut Vec<u8>) {
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
                // Type data (0b10); subtype 0 Data or 8 QoS Data.
                let subtype: u16 = if qos { 0x0080 } else { 0 };
                let fc: u16 = 0x0008 | subtype | if self.retry { 0x0800 } else { 0 };
                out.extend_from_slice(&fc.to_le_bytes());
                out.extend_from_slice(&dur_us.to_le_bytes());
                out.extend_from_slice(&mac(self.dst));
                out.extend_from_slice(&mac(self.src));
                out.extend_from_slice(&mac(BROADCAST)); // BSSID: ad hoc wildcard
                out.extend_from_slice(&((self.seq & 0x0fff) << 4).to_le_bytes());
                if qos {
                    // QoS Control: TID in bits 0-3, Ack Policy in bits 5-6 (0 Normal Ack,
                    // 1 No Ack); TXOP and queue size unused.
                    let ack_policy: u8 = if self.is_broadcast() { 1 << 5 } else { 0 };
                    out.extend_from_slice(&[(self.tid & 0x0f) | ack_policy, 0]);
                }
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

/// IEEE 802.3 CRC-32 (the 802.11 FCS): reflected polynomial 0xedb88320, initial value and
/// final XOR all ones, one table lookup a byte.
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in data {
        crc = (crc >> 8) ^ CRC32_TABLE[((crc ^ b as u32) & 0xff) as usize];
    }
    !crc
}

/// The CRC of each byte value, computed at compile time.
const CRC32_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u32;
        let mut k = 0;
        while k < 8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
            k += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

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
        ack.emit(&[], false, &mut out);
        assert_eq!(out.len() as u32, ACK_BYTES);
        let body = vec![0u8; 1028];
        let data = Frame {
            kind: FrameKind::Data,
            bytes: DATA_OVERHEAD_BYTES + LLC_SNAP_BYTES + 1028,
            ..ack
        };
        let mut out = vec![];
        data.emit(&body, false, &mut out);
        assert_eq!(out.len() as u32, data.bytes);
    }

    #[test]
    fn qos_data_carries_the_level_as_tid_and_no_ack_when_broadcast() {
        let data = Frame {
            kind: FrameKind::Data,
            src: 1,
            dst: 2,
            duration: SimTime::ZERO,
            seq: 5,
            tid: 6,
            retry: true,
            packet: NO_PACKET,
            bytes: DATA_OVERHEAD_BYTES + LLC_SNAP_BYTES + 100,
            rate_mbps: 11.0,
            code: 0,
        };
        let body = vec![0u8; 100];
        let mut out = vec![];
        data.emit(&body, true, &mut out);
        assert_eq!(out.len() as u32, data.bytes + 2, "the QoS Control field");
        assert_eq!(
            u16::from_le_bytes([out[0], out[1]]),
            0x0888,
            "QoS Data, retry"
        );
        assert_eq!(out[24], 6, "TID 6, Normal Ack");
        assert_eq!(
            crc32(&out[..out.len() - 4]).to_le_bytes(),
            out[out.len() - 4..]
        );
        let mut out = vec![];
        Frame {
            dst: BROADCAST,
            ..data
        }
        .emit(&body, true, &mut out);
        assert_eq!(out[24], 6 | 0x20, "No Ack");
        let mut out = vec![];
        data.emit(&body, false, &mut out);
        assert_eq!(u16::from_le_bytes([out[0], out[1]]), 0x0808, "plain Data");
    }
}
