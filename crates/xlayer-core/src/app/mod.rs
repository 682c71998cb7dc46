//! Traffic sources and sinks.
//!
//! A flow is a source at one node and a sink at another. Sources are constant bit rate (a packet
//! every `payload · 8 / rate` seconds, like ns-3's `OnOffApplication` always on) or saturating
//! (backlogged: the source's MAC queue is kept full, the usual saturation set-up of Bianchi's
//! model). Sinks record per-packet delay; the statistics live in `crate::metrics`.
//!
//! Over TCP the application is a bulk transfer: a given number of bytes (the flow completes when
//! the receiving application has them all) or, without a size, a long-lived backlogged sender.

pub mod arrivals;
pub mod traffic;

use crate::sim::SimTime;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SourceKind {
    Cbr { interval: SimTime },
    Saturate,
}

/// The transport a flow runs over: UDP datagrams, or a connection
/// (`crate::transport::conn::Conn`) of the protocol named, by its index in the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowTransport {
    Udp,
    Tcp(u32),
    Tfrc(u32),
    Clap(u32),
}

impl FlowTransport {
    /// The index of the flow's connection, if it runs over one.
    #[inline]
    pub fn conn(self) -> Option<u32> {
        match self {
            FlowTransport::Udp => None,
            FlowTransport::Tcp(c) | FlowTransport::Tfrc(c) | FlowTransport::Clap(c) => Some(c),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Flow {
    pub id: u32,
    pub src: u32,
    pub dst: u32,
    pub kind: SourceKind,
    pub payload_bytes: u32,
    pub start: SimTime,
    pub stop: SimTime,
    pub level: u8,
    pub next_seq: u64,
    pub active: bool,
    pub transport: FlowTransport,
    /// A request-driven application (web, e-mail) writing into the flow's TCP connection.
    pub app: Option<Box<traffic::AppTraffic>>,
}

impl Flow {
    /// Whether the source may emit at `now`.
    pub fn emitting(&self, now: SimTime) -> bool {
        self.active && now >= self.start && now < self.stop
    }
}

/// CBR packet interval for a rate in bit/s, rounded to the nanosecond (at least 1 ns).
pub fn cbr_interval(payload_bytes: u32, rate_bps: f64) -> SimTime {
    SimTime(
        ((payload_bytes as f64 * 8.0 / rate_bps) * 1e9)
            .round()
            .max(1.0) as u64,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn six_megabit_thousand_byte_interval() {
        assert_eq!(cbr_interval(1000, 6e6), SimTime(1_333_333));
    }
}
