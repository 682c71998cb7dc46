//! Declarations of tunable parameters and events (ECLAIR's tuning layers; ns-3's attributes and
//! trace sources): each layer declares its parameters and the events it publishes once, next to
//! its code, in a `tuning.rs` holding `PARAMS` ([`ParamSpec`]) and `EVENTS` ([`EventSpec`])
//! tables and the functions that read and set the parameters; `crate::tune` gathers the tables
//! into its registry. This module only names the declarations' shape, and the closed list of
//! event kinds (subscriptions are bitmasks over it), so that every layer can use them.

/// Declaration of one tunable parameter.
#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    /// Name; per-level parameters take a `.<level>` suffix.
    pub name: &'static str,
    pub layer: &'static str,
    pub doc: &'static str,
    pub unit: &'static str,
    pub min: f64,
    pub max: f64,
    pub per_level: bool,
    pub read_only: bool,
    /// Addressed per flow (`<name>.<flow>`), on the node that runs the flow's endpoint.
    pub per_flow: bool,
    /// What the index suffix of an indexed parameter names: "level" (a MAC priority level),
    /// "neighbour", "destination" (node ids) or "flow"; empty for a parameter without one.
    pub index: &'static str,
}

impl ParamSpec {
    /// The same parameter indexed by `what` ("neighbour", "destination", "flow") instead of
    /// a MAC level.
    pub const fn indexed_by(self, what: &'static str) -> ParamSpec {
        ParamSpec {
            index: what,
            ..self
        }
    }
}

#[allow(clippy::too_many_arguments)] // one row of the parameter table, read as such
pub const fn p(
    name: &'static str,
    layer: &'static str,
    doc: &'static str,
    unit: &'static str,
    min: f64,
    max: f64,
    per_level: bool,
    read_only: bool,
) -> ParamSpec {
    ParamSpec {
        name,
        layer,
        doc,
        unit,
        min,
        max,
        per_level,
        read_only,
        per_flow: false,
        index: if per_level { "level" } else { "" },
    }
}

/// A parameter of one node (no index suffix).
pub const fn node_param(
    name: &'static str,
    layer: &'static str,
    doc: &'static str,
    unit: &'static str,
    min: f64,
    max: f64,
    read_only: bool,
) -> ParamSpec {
    p(name, layer, doc, unit, min, max, false, read_only)
}

/// A parameter of one flow, addressed as `<name>.<flow>` on the node that runs the flow's
/// endpoint.
pub const fn flow_param(
    name: &'static str,
    layer: &'static str,
    doc: &'static str,
    unit: &'static str,
    min: f64,
    max: f64,
    read_only: bool,
) -> ParamSpec {
    ParamSpec {
        per_flow: true,
        index: "flow",
        ..p(name, layer, doc, unit, min, max, false, read_only)
    }
}

/// Kinds of events layers publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TuneEventKind {
    /// A MAC exchange finished: value 1 = acknowledged, 0 = dropped at the retry limit.
    MacTxOutcome,
    /// A packet was refused by a full queue: value = priority level (FIFO queueing) or
    /// destination (per-destination queueing).
    QueueOverflow,
    /// A TCP sender detected a loss: value 0 = three duplicate ACKs (or SACK), 1 = timeout.
    TcpLoss,
    /// A TCP retransmission timer expired: value = the backed-off RTO (s).
    TcpRto,
    /// A TCP congestion window changed: value = cwnd (segments).
    TcpWindow,
    /// The user changed an application's priority (`user.priority.<flow>`): value = the new
    /// priority x_i (UTL; the trigger of ECLAIR's receiver window control).
    UserPriority,
    /// Cross-layer shutdown requested by the user (`user.shutdown`): every optimizer of the
    /// node is unregistered (UTL).
    UserShutdown,
    /// A TCP segment reached the flow's receiver: value = payload bytes (transport; frequent).
    TcpSegmentRx,
    /// An application's sending rate was changed (`app.rate_bps.<flow>`): value = bit/s (ATL).
    AppRate,
    /// A MAC priority level's queue grew or shrank by one packet: value = its new length.
    MacQueueLen,
    /// Routes changed (next hop or reachability): value = how many destinations changed.
    RouteChange,
    /// A per-destination queue grew or shrank: value = the destination (read its length with
    /// `net.dest_queue_len.<destination>`).
    QueueChange,
    /// Injected noise at the node switched on or off: value = the noise power now (mW).
    PhyNoise,
    /// The MAC delivered a frame and every interface queue is empty: the link could send more
    /// than it was given (value = the level of the delivered frame).
    MacUnderflow,
    /// A passive flavor detector at the node decided a TCP flow's sender flavor (or changed its
    /// mind): value = 1 Reno, 2 NewReno, 3 Westwood, plus 10 with SACK
    /// (`transport::flavor::Flavor::event_code`).
    TcpFlavor,
}

impl TuneEventKind {
    pub const ALL: [TuneEventKind; 15] = [
        TuneEventKind::MacTxOutcome,
        TuneEventKind::QueueOverflow,
        TuneEventKind::TcpLoss,
        TuneEventKind::TcpRto,
        TuneEventKind::TcpWindow,
        TuneEventKind::UserPriority,
        TuneEventKind::UserShutdown,
        TuneEventKind::TcpSegmentRx,
        TuneEventKind::AppRate,
        TuneEventKind::MacQueueLen,
        TuneEventKind::RouteChange,
        TuneEventKind::QueueChange,
        TuneEventKind::PhyNoise,
        TuneEventKind::MacUnderflow,
        TuneEventKind::TcpFlavor,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TuneEventKind::MacTxOutcome => "mac.tx_outcome",
            TuneEventKind::QueueOverflow => "net.queue_overflow",
            TuneEventKind::TcpLoss => "transport.loss",
            TuneEventKind::TcpRto => "transport.rto",
            TuneEventKind::TcpWindow => "transport.window",
            TuneEventKind::UserPriority => "user.priority",
            TuneEventKind::UserShutdown => "user.shutdown",
            TuneEventKind::TcpSegmentRx => "transport.segment_rx",
            TuneEventKind::AppRate => "app.rate",
            TuneEventKind::MacQueueLen => "mac.queue_len",
            TuneEventKind::RouteChange => "net.route_change",
            TuneEventKind::QueueChange => "net.queue_change",
            TuneEventKind::PhyNoise => "phy.noise",
            TuneEventKind::MacUnderflow => "mac.underflow",
            TuneEventKind::TcpFlavor => "transport.flavor",
        }
    }

    pub fn from_name(s: &str) -> Option<TuneEventKind> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// Declaration of one event kind: the layer that publishes it, what its value means, its unit.
#[derive(Debug, Clone, Copy)]
pub struct EventSpec {
    pub kind: TuneEventKind,
    pub layer: &'static str,
    pub doc: &'static str,
    pub unit: &'static str,
}
