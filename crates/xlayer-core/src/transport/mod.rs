//! Transport protocols: UDP (RFC 768: a datagram is one network packet with an 8-byte UDP
//! header over a 20-byte IPv4 header), the TCP family ([`tcp`]), TFRC / TFRC-ECN ([`tfrc`]) and
//! CLAP ([`clap`], the CLAP slides' cross-layer aware file transfer).
//! Each is a sans-IO state machine; a flow's connection ([`conn::Conn`]) holds both its endpoints
//! and is the one component `crate::world` wires to the network layer. A packet
//! carries its transport header as a [`Header`] (`crate::wire`), which the network layer never reads.

pub mod clap;
pub mod conn;
pub mod flavor;
pub mod flavor_capture;
pub mod tcp;
pub mod tfrc;
pub mod tuning;

use crate::sim::SimTime;
use crate::wire::packet::{Control, Packet, IPV4_HEADER_BYTES, UDP_HEADER_BYTES};
pub use crate::wire::packet::{Header, ECN_CE, ECN_ECT0, ECN_NOT_ECT};

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
        control: Control::None,
        queue_len: 0,
    }
}
