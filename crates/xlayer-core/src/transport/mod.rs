//! Transport protocols: UDP (RFC 768: a datagram is one network packet with an 8-byte UDP
//! header over a 20-byte IPv4 header), the TCP family ([`tcp`]) and TFRC / TFRC-ECN ([`tfrc`]).
//! Each is a sans-IO state machine; `crate::world` wires them to the network layer. A packet
//! carries its transport header as a [`Header`], which the network layer never reads.

pub mod tcp;
pub mod tfrc;

use crate::net::{Packet, IPV4_HEADER_BYTES, UDP_HEADER_BYTES};
use crate::sim::SimTime;

/// The transport header a packet carries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Header {
    Udp,
    Tcp(tcp::TcpHeader),
    TfrcData(tfrc::TfrcData),
    TfrcFeedback(tfrc::TfrcFeedback),
}

/// ECN codepoints of the IP header (RFC 3168).
pub const ECN_NOT_ECT: u8 = 0;
pub const ECN_ECT0: u8 = 2;
pub const ECN_CE: u8 = 3;

/// Builds the UDP datagram of `flow`'s packet number `seq`.
#[allow(clippy::too_many_arguments)]
pub fn udp_datagram(
    flow: u32,
    seq: u64,
    src: u32,
    dst: u32,
    payload_bytes: u32,
    now: SimTime,
    ttl: u8,
    level: u8,
) -> Packet {
    Packet {
        flow,
        seq,
        src,
        dst,
        payload_bytes,
        header_bytes: UDP_HEADER_BYTES + IPV4_HEADER_BYTES,
        created: now,
        ttl,
        level,
        ecn: ECN_NOT_ECT,
        transport: Header::Udp,
        control: crate::net::Control::None,
        queue_len: 0,
    }
}
