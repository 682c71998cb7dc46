//! The transport layer's tuning layer (ECLAIR): per flow, the TCP sender's window, threshold,
//! RTT estimate and timeout it lets optimizers read, the receiver's advertised window and a
//! paced flow's rate it lets them set, and the sender's retransmissions, declared once in
//! [`PARAMS`] and reached through [`get`] and [`set`] only.

use super::tcp::{TcpReceiver, TcpSender};
use crate::error::XlError;
use crate::sim::param::{flow_param, EventSpec, ParamSpec, TuneEventKind};

pub const PARAMS: &[ParamSpec] = &[
    flow_param(
        "tcp.cwnd",
        "transport",
        "congestion window of the flow's TCP sender (at the flow's source)",
        "segments",
        0.0,
        f64::MAX,
        true,
    ),
    flow_param(
        "tcp.ssthresh",
        "transport",
        "slow-start threshold of the flow's TCP sender (inf until the first loss)",
        "segments",
        0.0,
        f64::INFINITY,
        true,
    ),
    flow_param(
        "tcp.srtt",
        "transport",
        "smoothed round-trip time of the flow's TCP sender (NaN before the first sample)",
        "s",
        0.0,
        f64::MAX,
        true,
    ),
    flow_param(
        "tcp.rto",
        "transport",
        "retransmission timeout of the flow's TCP sender",
        "s",
        0.0,
        f64::MAX,
        true,
    ),
    flow_param(
        "tcp.rwnd",
        "transport",
        "window the flow's TCP receiver advertises (at the flow's destination; set: ECLAIR's receiver window control, at least one MSS)",
        "bytes",
        1.0,
        1073725440.0,
        false,
    ),
    flow_param(
        "tcp.pace_rate",
        "transport",
        "sending rate of a paced TCP flow (cc = \"paced\"; DiffQ-TCP's source rate)",
        "bit/s",
        1.0,
        1e12,
        false,
    ),
    flow_param(
        "tcp.retransmits",
        "transport",
        "segments the flow's TCP sender retransmitted (at the flow's source)",
        "segments",
        0.0,
        f64::MAX,
        true,
    ),
];

/// The events the transport layer publishes.
pub const EVENTS: &[EventSpec] = &[
    EventSpec {
        kind: TuneEventKind::TcpLoss,
        layer: "transport",
        doc: "the flow's TCP sender detected a loss: 0 = duplicate ACKs/SACK, 1 = timeout",
        unit: "flag",
    },
    EventSpec {
        kind: TuneEventKind::TcpRto,
        layer: "transport",
        doc: "the flow's TCP retransmission timer expired: the backed-off RTO",
        unit: "s",
    },
    EventSpec {
        kind: TuneEventKind::TcpWindow,
        layer: "transport",
        doc: "the flow's TCP congestion window changed: cwnd",
        unit: "segments",
    },
    EventSpec {
        kind: TuneEventKind::TcpSegmentRx,
        layer: "transport",
        doc: "a TCP data segment reached the flow's receiver: payload bytes (one per packet)",
        unit: "bytes",
    },
    EventSpec {
        kind: TuneEventKind::TcpFlavor,
        layer: "transport",
        doc: "the node's passive flavor detector decided the flow's TCP flavor: 1 Reno, 2 NewReno, 3 Westwood, +10 with SACK",
        unit: "code",
    },
];

/// Whether `spec` is one of this layer's.
pub fn owns(spec: &ParamSpec) -> bool {
    PARAMS.iter().any(|p| p.name == spec.name)
}

/// Whether `spec` lives at the flow's source (else at its destination: the receiver's window).
pub fn at_source(spec: &ParamSpec) -> bool {
    spec.name != "tcp.rwnd"
}

pub fn get(sender: &TcpSender, receiver: &TcpReceiver, spec: &ParamSpec) -> f64 {
    match spec.name {
        "tcp.cwnd" => sender.cwnd(),
        "tcp.ssthresh" => {
            if sender.ssthresh() >= 1e15 {
                f64::INFINITY
            } else {
                sender.ssthresh()
            }
        }
        "tcp.srtt" => sender.srtt().unwrap_or(f64::NAN),
        "tcp.rto" => sender.rto(),
        "tcp.rwnd" => receiver.advertised_window() as f64,
        "tcp.pace_rate" => sender.pace_rate(),
        "tcp.retransmits" => sender.stats.retransmits as f64,
        _ => unreachable!("every parameter of transport::tuning::PARAMS is handled"),
    }
}

/// What setting a parameter asks of the node assembly besides the layer's own state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Then {
    Nothing,
    /// Apply this pacing rate (bit/s): the sender's next departure is rescheduled.
    Pace(f64),
}

/// Sets `spec` to `value`, already checked against the declared range.
pub fn set(
    sender: &TcpSender,
    receiver: &mut TcpReceiver,
    spec: &ParamSpec,
    name: &str,
    value: f64,
) -> Result<Then, XlError> {
    match spec.name {
        "tcp.rwnd" => {
            receiver.set_window_limit(value as u32);
            Ok(Then::Nothing)
        }
        "tcp.pace_rate" => {
            if !sender.is_paced() {
                return Err(XlError::Tuning(format!(
                    "\"{name}\": the flow's congestion control is not \"paced\""
                )));
            }
            Ok(Then::Pace(value))
        }
        _ => unreachable!("every settable parameter of transport::tuning::PARAMS is handled"),
    }
}
