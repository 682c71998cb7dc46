//! The network layer: forwarding, queues, routing and link estimation.
//!
//! Depends on `sim` and `wire` ([`Packet`] and its arena live in `crate::wire::packet`). A packet is created once by its source and lives in the
//! [`PacketArena`] until it is delivered or dropped; layers pass its `u32` handle. A relay
//! receiving a copy over the air gets its own slot (the sender keeps its copy until acknowledged).
//! Forwarding decrements the TTL (IPv4, RFC 791) and drops at zero.

pub mod action;
pub mod coding;
pub mod dsdv;
pub mod etx;
pub mod linkloss;
pub mod olsr;
pub mod proto;
pub mod queue;
pub mod routing;
pub mod tuning;

pub use crate::wire::packet::{Control, Packet, PacketArena, IPV4_HEADER_BYTES, UDP_HEADER_BYTES};
pub use action::Action;
pub use routing::{Routing, StaticRoutes};
