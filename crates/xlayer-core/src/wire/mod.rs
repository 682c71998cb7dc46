//! What travels: packets and their arena, the transport headers they carry, MAC frames, node
//! addresses, and their bytes for pcap traces with their radiotap headers (smoltcp's `wire/`).
//!
//! The lowest layer above the engine: it depends on `sim` only, and every layer (phy, mac, net,
//! transport, app) reads these types without importing the layer that makes them. State
//! machines stay in their layers.
//!
//! Addressing: a node is its id `n`; on the wire its MAC address is 02:00 followed by `n` in four
//! bytes (big-endian), and its IPv4 address 10.0.0.0 + (n + 1). [`BROADCAST`] (`u32::MAX`) is
//! ff:ff:ff:ff:ff:ff and 255.255.255.255.

pub mod clap;
pub mod frame;
pub mod packet;
pub mod pcap_read;
pub mod radiotap;
pub mod tcp;
pub mod tfrc;

/// The broadcast address, as a node id.
pub const BROADCAST: u32 = u32::MAX;
