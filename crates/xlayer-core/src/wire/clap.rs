//! CLAP's packet headers (CLAP slides, seed document 001: "Cross Layer Aware transport
//! Protocol"): data, the aggregate NACK, and the probe packet (PP) with its reply. The sender
//! and receiver are in `crate::transport::clap`.
//!
//! The slides name the fields (a NACK's "Seqno and Bitmap fields", a probe's rate stamped
//! `min(PPrate, Nrate)` at each node) but give no byte layout; the layout below is xlayer's,
//! every CLAP header riding over UDP (RFC 768) like the slides' ns-2 agents over IP, and is what
//! the pcap writer emits (big-endian):
//!
//! ```text
//! data     | type=1 | flags | 0 0 | seq (4) | tx (4) | checksum (4) |            16 bytes
//! nack     | type=2 | flags | bitmap bytes (2) | cum (4) | echo tx (4) | id (4) | bitmap...
//! probe    | type=3 | flags | 0 0 | id (4) | rate kbit/s (4) | sent µs (4) |    16 bytes
//! reply    | type=4 | same as the probe, its rate the path's minimum          16 bytes
//! ```
//!
//! `seq` numbers the file's packets from 0; `tx` numbers the sender's transmissions (a
//! retransmission gets a new one), which is how the sender tells a hole from a packet still in
//! flight: a NACK echoes the latest `tx` the receiver got, and a packet whose latest
//! transmission went out before it and is still missing was lost (static routes keep a flow's
//! packets in order). A NACK's bitmap covers the packets `cum .. cum + 8 · bytes`, bit `i`
//! (most significant first) set when packet `cum + i` is held; its length varies from one byte
//! (8 packets) to the whole file, as the slides' "variable length Bitmap". NACK flag 1 says the
//! receiver holds the whole file. The bitmap's contents stay in the connection (the packet
//! carries its length and an id to find them), so that packets stay small and `Copy`.

/// Bytes of every CLAP header but the NACK's bitmap.
pub const CLAP_HEADER_BYTES: u32 = 16;

/// Type codes of the first byte.
pub const CLAP_DATA: u8 = 1;
pub const CLAP_NACK: u8 = 2;
pub const CLAP_PROBE: u8 = 3;
pub const CLAP_PROBE_REPLY: u8 = 4;

/// NACK flag: the receiver holds the whole file.
pub const NACK_COMPLETE: u8 = 1;

/// A CLAP header.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClapHeader {
    Data(ClapData),
    Nack(ClapNack),
    Probe(ClapProbe),
    ProbeReply(ClapProbe),
}

/// A data packet: the file's packet `seq`, sent as transmission `tx`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClapData {
    pub seq: u32,
    pub tx: u32,
    /// Checksum of the packet's bytes of the file (`transport::tcp::content_checksum`, folded
    /// to 32 bits), so the receiver can check every byte it delivers.
    pub checksum: u32,
}

/// An aggregate NACK: everything before `cum` is held; the bitmap (kept by the connection under
/// `id`) covers `cum .. end`; `echo_tx` is the latest transmission the receiver got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClapNack {
    pub id: u32,
    pub cum: u32,
    pub end: u32,
    pub echo_tx: u32,
    pub complete: bool,
}

impl ClapNack {
    /// Bytes of the bitmap: one bit per packet of `cum .. end`, at least one byte.
    pub fn bitmap_bytes(&self) -> u32 {
        self.end.saturating_sub(self.cum).div_ceil(8).max(1)
    }
}

/// A probe packet (PP) or its reply: `rate_bps` is the smallest MAC sending rate stamped on the
/// way (`f64::INFINITY` until a node stamps it), `sent` the probe's departure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClapProbe {
    pub id: u32,
    pub rate_bps: f64,
    pub sent: crate::sim::SimTime,
}

impl ClapHeader {
    /// Header bytes on the wire (over UDP).
    pub fn bytes(&self) -> u32 {
        match self {
            ClapHeader::Nack(n) => CLAP_HEADER_BYTES + n.bitmap_bytes(),
            _ => CLAP_HEADER_BYTES,
        }
    }

    /// The header's wire form (the NACK's bitmap as zero bytes: its contents are not carried).
    pub fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        match *self {
            ClapHeader::Data(d) => {
                out.extend_from_slice(&[CLAP_DATA, 0, 0, 0]);
                out.extend_from_slice(&d.seq.to_be_bytes());
                out.extend_from_slice(&d.tx.to_be_bytes());
                out.extend_from_slice(&d.checksum.to_be_bytes());
            }
            ClapHeader::Nack(n) => {
                let flags = if n.complete { NACK_COMPLETE } else { 0 };
                out.extend_from_slice(&[CLAP_NACK, flags]);
                out.extend_from_slice(
                    &(n.bitmap_bytes().min(u16::MAX as u32) as u16).to_be_bytes(),
                );
                out.extend_from_slice(&n.cum.to_be_bytes());
                out.extend_from_slice(&n.echo_tx.to_be_bytes());
                out.extend_from_slice(&n.id.to_be_bytes());
                out.resize(out.len() + n.bitmap_bytes() as usize, 0);
            }
            ClapHeader::Probe(p) | ClapHeader::ProbeReply(p) => {
                let kind = if matches!(self, ClapHeader::Probe(_)) {
                    CLAP_PROBE
                } else {
                    CLAP_PROBE_REPLY
                };
                out.extend_from_slice(&[kind, 0, 0, 0]);
                out.extend_from_slice(&p.id.to_be_bytes());
                let kbps = if p.rate_bps.is_finite() {
                    (p.rate_bps / 1e3).round().min(u32::MAX as f64) as u32
                } else {
                    u32::MAX
                };
                out.extend_from_slice(&kbps.to_be_bytes());
                out.extend_from_slice(&((p.sent.ns() / 1000) as u32).to_be_bytes());
            }
        }
        debug_assert_eq!(out.len() - start, self.bytes() as usize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimTime;

    #[test]
    fn every_header_emits_as_many_bytes_as_it_counts() {
        let headers = [
            ClapHeader::Data(ClapData {
                seq: 7,
                tx: 9,
                checksum: 3,
            }),
            ClapHeader::Nack(ClapNack {
                id: 1,
                cum: 10,
                end: 10,
                echo_tx: 4,
                complete: false,
            }),
            ClapHeader::Nack(ClapNack {
                id: 1,
                cum: 10,
                end: 27,
                echo_tx: 4,
                complete: false,
            }),
            ClapHeader::Probe(ClapProbe {
                id: 2,
                rate_bps: f64::INFINITY,
                sent: SimTime(1_000_000),
            }),
            ClapHeader::ProbeReply(ClapProbe {
                id: 2,
                rate_bps: 5.5e6,
                sent: SimTime(1_000_000),
            }),
        ];
        for h in headers {
            let mut out = vec![];
            h.emit(&mut out);
            assert_eq!(out.len() as u32, h.bytes(), "{h:?}");
        }
    }

    #[test]
    fn a_nack_bitmap_takes_a_bit_per_packet_and_at_least_a_byte() {
        let n = |cum, end| ClapNack {
            id: 0,
            cum,
            end,
            echo_tx: 0,
            complete: false,
        };
        assert_eq!(n(5, 5).bitmap_bytes(), 1);
        assert_eq!(n(0, 8).bitmap_bytes(), 1);
        assert_eq!(n(0, 9).bitmap_bytes(), 2);
        assert_eq!(n(100, 100 + 718).bitmap_bytes(), 90);
        let mut out = vec![];
        let h = ClapHeader::Nack(ClapNack {
            complete: true,
            ..n(3, 20)
        });
        h.emit(&mut out);
        assert_eq!(out[0], CLAP_NACK);
        assert_eq!(out[1], NACK_COMPLETE);
        assert_eq!(u16::from_be_bytes([out[2], out[3]]), 3);
        assert_eq!(u32::from_be_bytes([out[4], out[5], out[6], out[7]]), 3);
    }
}
