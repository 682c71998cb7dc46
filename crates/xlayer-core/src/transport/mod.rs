//! Transport protocols. This version carries UDP (RFC 768): no reliability, no congestion
//! control; a datagram is one network packet with an 8-byte UDP header over a 20-byte IPv4 header.
//! Later protocols (the TCP family, TFRC, CLAP) live here beside it.

use crate::net::{Packet, IPV4_HEADER_BYTES, UDP_HEADER_BYTES};
use crate::sim::SimTime;

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
        control: crate::net::Control::None,
        queue_len: 0,
    }
}
