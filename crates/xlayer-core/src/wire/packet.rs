//! What travels at the network layer: the packet (IPv4 header fields, the transport header it
//! carries, a routing protocol's control contents), the arena packets live in, and their wire
//! form for pcap traces.
//!
//! Depends on `sim` and the other `wire` formats only: every layer may read a packet, none owns
//! its type. Node `n` is IPv4 address 10.0.0.0 + (n + 1); [`super::BROADCAST`] is
//! 255.255.255.255.

use super::clap::ClapHeader;
use super::more::MoreCoded;
use super::tcp::{TcpHeader, SACK_PERMITTED, SYN};
use super::tfrc::{TfrcData, TfrcFeedback};
use super::BROADCAST;
use crate::sim::SimTime;

/// The transport header a packet carries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Header {
    Udp,
    Tcp(TcpHeader),
    TfrcData(TfrcData),
    TfrcFeedback(TfrcFeedback),
    /// CLAP's data, NACK, probe and probe reply (over UDP).
    Clap(ClapHeader),
    /// A MORE coded packet: its batch and code vector (over UDP; `super::more`).
    More(MoreCoded),
}

impl Header {
    /// Whether the header is a MORE coded packet's.
    #[inline]
    pub fn is_more_coded(&self) -> bool {
        matches!(self, Header::More(_))
    }

    /// Whether relays write into the header as they forward it (a CLAP probe: each relay
    /// stamps `min(PPrate, Nrate)`).
    #[inline]
    pub fn stamped_by_relays(&self) -> bool {
        matches!(self, Header::Clap(ClapHeader::Probe(_)))
    }

    /// Whether the header is a CLAP data packet's.
    #[inline]
    pub fn is_clap_data(&self) -> bool {
        matches!(self, Header::Clap(ClapHeader::Data(_)))
    }
}

/// ECN codepoints of the IP header (RFC 3168).
pub const ECN_NOT_ECT: u8 = 0;
pub const ECN_ECT0: u8 = 2;
pub const ECN_CE: u8 = 3;

/// IPv4 header without options (RFC 791).
pub const IPV4_HEADER_BYTES: u32 = 20;
/// UDP header (RFC 768).
pub const UDP_HEADER_BYTES: u32 = 8;

#[derive(Debug, Clone, Copy)]
pub struct Packet {
    pub flow: u32,
    pub seq: u64,
    pub src: u32,
    pub dst: u32,
    /// Application payload bytes.
    pub payload_bytes: u32,
    /// Transport + network header bytes.
    pub header_bytes: u32,
    pub created: SimTime,
    pub ttl: u8,
    /// MAC priority level.
    pub level: u8,
    /// ECN field of the IP header ([`ECN_NOT_ECT`], [`ECN_ECT0`], [`ECN_CE`]).
    pub ecn: u8,
    /// The transport header (opaque to the network layer).
    pub transport: Header,
    /// What a routing/link-estimation control packet carries; [`Control::None`] for data.
    pub control: Control,
    /// DiffQ header's queue-length field: the transmitting node's queue length for `dst`,
    /// written at each transmission under per-destination queueing (`net::queue`).
    pub queue_len: u16,
}

/// The kind of a control packet and the handle of its contents. The contents themselves (probe
/// entries, route tables) stay in the sender's protocol state, published under the handle when
/// the packet is made, so that packets stay small and `Copy`; a receiver reads them if the
/// handle is still the sender's latest (`crate::net::proto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Control {
    /// A data packet.
    #[default]
    None,
    /// ETX probe with its sequence number (`net::etx`).
    EtxProbe { seq: u32 },
    /// Part `part` of DSDV update `id` (`net::dsdv`).
    DsdvUpdate { id: u32, part: u32 },
    /// OLSR topology control message of `origin` numbered `ansn` (`net::olsr`), as sent or
    /// relayed.
    OlsrTc { origin: u32, ansn: u32 },
    /// DCLO's PRICE of matching interval `interval` (`xl::dclo`); the prices stay in the
    /// sender's DCLO state.
    DcloPrice { interval: u32 },
    /// DCLO's REQUEST to `target`, or ACCEPT naming `target`, in matching interval `interval`.
    DcloMatch {
        interval: u32,
        target: u32,
        accept: bool,
    },
    /// MORE's batch ACK: `flow`'s destination decoded batch `batch` (`super::more`); unicast
    /// hop by hop towards the flow's source.
    MoreAck { flow: u32, batch: u32 },
}

impl Control {
    #[inline]
    pub fn is_control(self) -> bool {
        self != Control::None
    }
}

impl Packet {
    /// Bytes handed to the MAC (network packet including headers).
    pub fn bytes(&self) -> u32 {
        self.payload_bytes + self.header_bytes
    }

    /// The packet's IPv4/UDP wire form (zero payload), for pcap traces.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let total = self.bytes() as u16;
        // Node n is 10.0.0.0 + (n + 1); broadcast is 255.255.255.255.
        let ip = |n: u32| -> [u8; 4] {
            if n == BROADCAST {
                return [255; 4];
            }
            let m = n + 1;
            [10, (m >> 16) as u8, (m >> 8) as u8, m as u8]
        };
        let start = out.len();
        out.extend_from_slice(&[0x45, 0, (total >> 8) as u8, total as u8]);
        out.extend_from_slice(&((self.seq & 0xffff) as u16).to_be_bytes());
        let tcp = match self.transport {
            Header::Tcp(h) => Some(h),
            _ => None,
        };
        let proto = if tcp.is_some() { 6 } else { 17 };
        out.extend_from_slice(&[0x40, 0, self.ttl, proto, 0, 0]);
        out[start + 1] = self.ecn & 3;
        out.extend_from_slice(&ip(self.src));
        out.extend_from_slice(&ip(self.dst));
        // IPv4 header checksum (RFC 1071).
        let mut sum: u32 = 0;
        for c in out[start..start + 20].chunks(2) {
            sum += u16::from_be_bytes([c[0], c[1]]) as u32;
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        let ck = !(sum as u16);
        out[start + 10..start + 12].copy_from_slice(&ck.to_be_bytes());
        let port = 9000u16.wrapping_add(self.flow as u16);
        match tcp {
            Some(h) => emit_tcp(&h, port, out),
            None => {
                let udp_len = (self.bytes() - IPV4_HEADER_BYTES) as u16;
                out.extend_from_slice(&port.to_be_bytes());
                out.extend_from_slice(&port.to_be_bytes());
                out.extend_from_slice(&udp_len.to_be_bytes());
                out.extend_from_slice(&[0, 0]); // checksum optional over IPv4
                if let Header::Clap(h) = self.transport {
                    h.emit(out);
                }
            }
        }
        out.resize(start + total as usize, 0);
    }
}

/// A TCP header with its options (RFC 793, RFC 2018, RFC 6691 MSS), zero checksum.
fn emit_tcp(h: &TcpHeader, port: u16, out: &mut Vec<u8>) {
    let opts = h.option_bytes();
    out.extend_from_slice(&port.to_be_bytes());
    out.extend_from_slice(&port.to_be_bytes());
    out.extend_from_slice(&(h.seq as u32).to_be_bytes());
    out.extend_from_slice(&(h.ack as u32).to_be_bytes());
    out.push((((20 + opts) / 4) as u8) << 4);
    out.push(h.flags & 0x3f);
    out.extend_from_slice(&(h.wnd.min(65535) as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    if h.has(SYN) {
        out.extend_from_slice(&[2, 4]);
        out.extend_from_slice(&(h.mss.min(65535) as u16).to_be_bytes());
        if h.has(SACK_PERMITTED) {
            out.extend_from_slice(&[1, 1, 4, 2]);
        }
    } else if h.nsack > 0 {
        out.extend_from_slice(&[1, 1, 5, 2 + 8 * h.nsack]);
        for &(l, r) in &h.sack[..h.nsack as usize] {
            out.extend_from_slice(&(l as u32).to_be_bytes());
            out.extend_from_slice(&(r as u32).to_be_bytes());
        }
    }
}

/// Slab of packets addressed by `u32` handles; freed slots are reused, so steady state allocates
/// nothing.
#[derive(Debug, Default)]
pub struct PacketArena {
    slots: Vec<Packet>,
    free: Vec<u32>,
}

impl PacketArena {
    pub fn alloc(&mut self, p: Packet) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = p;
                i
            }
            None => {
                self.slots.push(p);
                (self.slots.len() - 1) as u32
            }
        }
    }

    #[inline]
    pub fn get(&self, h: u32) -> &Packet {
        &self.slots[h as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, h: u32) -> &mut Packet {
        &mut self.slots[h as usize]
    }

    pub fn release(&mut self, h: u32) {
        debug_assert!(!self.free.contains(&h), "double free of packet {h}");
        self.free.push(h);
    }

    /// Packets currently alive.
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arena_reuses_released_slots() {
        let mut a = PacketArena::default();
        let p = Packet {
            flow: 0,
            seq: 0,
            src: 0,
            dst: 1,
            payload_bytes: 10,
            header_bytes: 28,
            created: SimTime::ZERO,
            ttl: 64,
            level: 0,
            ecn: 0,
            transport: Header::Udp,
            control: Control::None,
            queue_len: 0,
        };
        let h1 = a.alloc(p);
        let h2 = a.alloc(p);
        a.release(h1);
        assert_eq!(a.alloc(p), h1);
        assert_ne!(h1, h2);
        assert_eq!(a.live(), 2);
    }

    #[test]
    fn emitted_packet_has_its_length_and_a_valid_ip_checksum() {
        let p = Packet {
            flow: 3,
            seq: 7,
            src: 1,
            dst: 2,
            payload_bytes: 100,
            header_bytes: 28,
            created: SimTime::ZERO,
            ttl: 64,
            level: 0,
            ecn: 0,
            transport: Header::Udp,
            control: Control::None,
            queue_len: 0,
        };
        let mut out = vec![];
        p.emit(&mut out);
        assert_eq!(out.len(), 128);
        let mut sum: u32 = 0;
        for c in out[..20].chunks(2) {
            sum += u16::from_be_bytes([c[0], c[1]]) as u32;
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        assert_eq!(sum, 0xffff);
    }
}
