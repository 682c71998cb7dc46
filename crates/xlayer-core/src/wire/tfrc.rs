//! TFRC's packet headers (RFC 5348 §3.2): a data packet's and a receiver report's. The
//! sender and receiver are in `crate::transport::tfrc`.

use crate::sim::SimTime;

/// Header of a TFRC data packet (RFC 5348 §3.2.1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TfrcData {
    pub seq: u64,
    pub timestamp: SimTime,
    /// The sender's RTT estimate; ZERO when unknown.
    pub rtt: SimTime,
}

/// A receiver feedback report (RFC 5348 §3.2.2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TfrcFeedback {
    /// Timestamp of the last data packet received (t_recvdata).
    pub timestamp_echo: SimTime,
    /// Time between that packet's arrival and this report (t_delay).
    pub elapsed: SimTime,
    /// Receive rate since the previous report, bit/s.
    pub x_recv_bps: f64,
    /// Loss event rate.
    pub p: f64,
}
