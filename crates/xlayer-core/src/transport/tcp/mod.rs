//! TCP: one implementation, pluggable congestion control.
//!
//! The sender ([`TcpSender`]) and the receiver ([`TcpReceiver`]) are sans-IO state machines:
//! the node assembly (`crate::world`) hands them segments and timer expiries with the current
//! time, and they answer through a reused [`TcpOut`] (segments to send, timers to arm, bytes for
//! the application, tuning-layer events). Nothing here allocates per segment in steady state.
//!
//! What is modelled, and after which standard:
//! - connection set-up and tear-down: SYN, SYN-ACK, ACK and FIN, FIN-ACK, ACK, so a lost
//!   handshake segment costs what it costs a real TCP (RFC 793; the SYN is retransmitted on the
//!   RTO, the SYN-ACK when a duplicate SYN arrives, the FIN-ACK when a duplicate FIN arrives);
//! - byte sequence numbers (relative, ISN 0, the SYN and the FIN each take one), MSS-sized
//!   segments, cumulative ACKs, the advertised receive window (RFC 7323 window scaling off by
//!   default: the window then cannot exceed 65535 bytes);
//! - delayed ACKs (RFC 1122 §4.2.3.2, RFC 5681 §4.2): an ACK for every second full-sized
//!   segment or after 200 ms, an immediate ACK for a segment out of order or one that fills a
//!   hole;
//! - RTO per RFC 6298 (initial 1 s, SRTT/RTTVAR with alpha 1/8 and beta 1/4, K = 4, minimum
//!   1 s by default, maximum 60 s), one segment timed at a time with Karn's rule, exponential
//!   back-off;
//! - fast retransmit on the third duplicate ACK and fast recovery: Reno (RFC 5681), NewReno
//!   partial ACKs (RFC 6582), or SACK-based loss recovery (RFC 2018 option, three blocks; RFC
//!   6675 scoreboard, `IsLost` with DupThresh 3, `NextSeg` rules 1 and 2, `pipe`);
//! - congestion control variants ([`CcKind`]): Reno, NewReno, Westwood+, TCP-FeW and an
//!   externally paced mode without congestion control (DiffQ-TCP).
//!
//! Internally the sender counts in segments: the application is a bulk source, so every segment
//! but the last carries one MSS, and segment `k` starts at byte sequence `1 + k·MSS`.

mod receiver;
mod sender;
#[doc(hidden)]
pub mod testbed;

pub use receiver::RecvState;
pub use receiver::TcpReceiver;
pub use sender::{SendState, SenderStats, TcpSender};

pub use crate::wire::tcp::{
    TcpHeader, ACK, FIN, MAX_SACK_BLOCKS, SACK_PERMITTED, SYN, TCP_HEADER_BYTES,
};

use crate::sim::SimTime;

/// Congestion control of a connection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CcKind {
    /// RFC 5681: slow start, congestion avoidance, fast retransmit and fast recovery (a partial
    /// ACK ends recovery).
    Reno,
    /// RFC 6582: fast recovery lasts until everything outstanding at its start is acknowledged;
    /// each partial ACK retransmits the next hole.
    NewReno,
    /// Westwood+ (Mascolo et al. 2004): the bandwidth estimate from the ACK stream sets
    /// `ssthresh = BWE · RTTmin / MSS` after three duplicate ACKs and after a timeout; window
    /// growth and recovery are NewReno's.
    Westwood,
    /// TCP-FeW (Nahm, Helmy, Kuo 2005): congestion avoidance grows the window by `alpha` segments
    /// per round trip instead of one (DPCLO uses alpha = 0.01); otherwise NewReno.
    Few { alpha: f64 },
    /// No congestion control: TCP's reliability (ACKs, retransmission on three duplicate ACKs or
    /// SACK, RTO) with segments sent at a rate set from outside (DiffQ-TCP: "retain TCP's
    /// reliability, switch off its congestion control"). Only the receive window limits it.
    Paced { rate_bps: f64 },
}

impl CcKind {
    pub fn name(&self) -> &'static str {
        match self {
            CcKind::Reno => "reno",
            CcKind::NewReno => "newreno",
            CcKind::Westwood => "westwood",
            CcKind::Few { .. } => "few",
            CcKind::Paced { .. } => "paced",
        }
    }
}

/// Per-connection settings (scenario `flows[].tcp_*` fields; defaults in `docs/scenario.md`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TcpConfig {
    /// Payload bytes per segment.
    pub mss: u32,
    pub cc: CcKind,
    pub sack: bool,
    pub delayed_ack: bool,
    /// Delayed-ACK timer (RFC 1122 allows up to 500 ms; 200 ms is the common value, ns-2's
    /// `DelAckSink` interval_ 100 ms and Linux's 40-200 ms bracket it).
    pub delack_timeout: SimTime,
    /// Receive buffer, the largest window the receiver advertises.
    pub rcv_buf_bytes: u32,
    /// RFC 7323 window scaling: without it the advertised window is capped at 65535 bytes.
    pub window_scale: bool,
    /// Initial window in segments; default [`rfc5681_initial_window`] of the MSS.
    pub initial_cwnd: u32,
    /// RFC 6298 (2.4): minimum RTO 1 s.
    pub min_rto: SimTime,
    /// RFC 6298 (2.5): a maximum of at least 60 s.
    pub max_rto: SimTime,
    /// Bytes the application sends; `None`: a long-lived transfer that never ends.
    pub total_bytes: Option<u64>,
    /// Key of the application's byte stream (for [`content_checksum`]).
    pub stream_key: u64,
    /// Compute payload checksums and check them at the receiver (costs a pass over the bytes).
    pub verify_stream: bool,
    /// The application writes its data over time ([`TcpSender::write`]: web pages, e-mails on
    /// one persistent connection) instead of having `total_bytes` (or an endless stream) ready.
    pub app_limited: bool,
}

impl TcpConfig {
    pub fn new(cc: CcKind) -> TcpConfig {
        TcpConfig {
            mss: 1000,
            cc,
            sack: false,
            delayed_ack: true,
            delack_timeout: SimTime::from_secs_f64(0.2),
            rcv_buf_bytes: 65535,
            window_scale: false,
            initial_cwnd: rfc5681_initial_window(1000),
            min_rto: SimTime::from_secs_f64(1.0),
            max_rto: SimTime::from_secs_f64(60.0),
            total_bytes: None,
            stream_key: 0,
            verify_stream: false,
            app_limited: false,
        }
    }

    /// The largest window the receiver can advertise.
    pub fn max_window(&self) -> u32 {
        if self.window_scale {
            self.rcv_buf_bytes
        } else {
            self.rcv_buf_bytes.min(65535)
        }
    }
}

/// RFC 5681 §3.1 initial window: 2 segments for an MSS above 2190 bytes, 3 above 1095, else 4.
pub fn rfc5681_initial_window(mss: u32) -> u32 {
    if mss > 2190 {
        2
    } else if mss > 1095 {
        3
    } else {
        4
    }
}

/// Timers of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpTimer {
    /// Sender: retransmission timeout.
    Rto,
    /// Sender: the pacing clock of [`CcKind::Paced`].
    Pace,
    /// Receiver: the delayed-ACK timer.
    DelAck,
}

/// Events the transport tuning layer publishes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TcpNotice {
    /// A loss was detected: `timeout` false for three duplicate ACKs (or SACK), true for an RTO.
    Loss { timeout: bool },
    /// The congestion window changed (segments).
    Window { cwnd: f64 },
}

/// What a call into a TCP endpoint asks of its owner. The owner clears it after each call.
#[derive(Debug, Default)]
pub struct TcpOut {
    /// Segments to hand to the network, in order.
    pub segments: Vec<TcpHeader>,
    /// Timers to arm: the owner schedules one event per entry (stale ones are ignored by the
    /// endpoint when they fire).
    pub timers: Vec<(TcpTimer, SimTime)>,
    /// In-order application data delivered: `(stream offset, bytes, checksum ok)`.
    pub delivered: Vec<(u64, u32, bool)>,
    pub notices: Vec<TcpNotice>,
}

impl TcpOut {
    pub fn clear(&mut self) {
        self.segments.clear();
        self.timers.clear();
        self.delivered.clear();
        self.notices.clear();
    }
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Byte `offset` of the application stream `key`: a fixed pseudo-random byte sequence, so the
/// receiver can check what it was handed without the sender's buffer.
#[inline]
pub fn stream_byte(key: u64, offset: u64) -> u8 {
    (splitmix64(key ^ (offset >> 3).wrapping_mul(0xD6E8_FEB8_6659_FD93)) >> ((offset & 7) * 8))
        as u8
}

/// FNV-1a over the stream's bytes `[offset, offset + len)`: the sender stamps it on a segment
/// from the bytes at the segment's sequence number, the receiver recomputes it from the bytes
/// that belong at the offset where it delivers the segment.
pub fn content_checksum(key: u64, offset: u64, len: u32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for o in offset..offset + len as u64 {
        h ^= stream_byte(key, o) as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^ offset.rotate_left(17) ^ len as u64
}

#[cfg(test)]
mod tests;
