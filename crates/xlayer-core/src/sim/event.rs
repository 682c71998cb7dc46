//! The event enum. Variants carry only small ids and values; the node assembly
//! (`crate::world`) dispatches them by `match` to the owning node and layer.

/// Which MAC timer fired; each kind has its own generation counter in the MAC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerKind {
    /// A priority level's backoff has run out: it may transmit.
    Access,
    /// No ACK (or CTS) arrived in time.
    ResponseTimeout,
    /// SIFS has passed: send the pending ACK, CTS or the DATA after a CTS.
    Sifs,
    /// The network allocation vector has expired.
    NavEnd,
    /// Z-MAC: a TDMA slot boundary the node wants to contend at (`crate::mac::zmac`).
    ZmacSlot,
    /// Z-MAC: the end of a ZMAC+ priority wait or of the Z-MAC contention backoff.
    ZmacAccess,
}

/// Which network-layer protocol timer fired (`crate::net::proto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetTimerKind {
    /// Time to send the next ETX probe.
    EtxProbe,
    /// Periodic DSDV full dump.
    DsdvPeriodic,
    /// A triggered DSDV update may be due. A node has one such timer: arming it again moves
    /// the pending one ([`NetTimerKind::is_single`]).
    DsdvTrigger,
    /// Periodic OLSR topology control message.
    OlsrTc,
    /// OLSR TC relays whose jitter has run out. One such timer per node, as for
    /// [`NetTimerKind::DsdvTrigger`].
    OlsrRelay,
    /// Fusion: a blocked head packet or a source waiting for a token may go (`xl::fusion`).
    FusionRetry,
    /// DCLO: the node broadcasts its PRICE (`xl::dclo`).
    DcloPrice,
    /// DCLO: the node computes its link weights and starts matching.
    DcloMatch,
    /// DCLO: a REQUEST may be repeated.
    DcloRetry,
}

impl NetTimerKind {
    /// Whether a node has at most one timer of this kind pending, so that arming it moves the
    /// pending one rather than adding a second.
    #[inline]
    pub fn is_single(self) -> bool {
        matches!(self, NetTimerKind::DsdvTrigger | NetTimerKind::OlsrRelay)
    }
}

#[derive(Debug, Clone, Copy)]
pub enum Event {
    /// `node` finishes transmitting its current frame.
    TxEnd { node: u32 },
    /// The first bit of transmission `tx` reaches its `index`-th receiver (those that can decode
    /// or carrier-sense it, in order of propagation delay; each arrival schedules the next, so a transmission keeps one
    /// pending arrival in the queue however many nodes hear it).
    SignalStart { tx: u32, index: u32 },
    /// The last bit of transmission `tx` reaches its `index`-th receiver.
    SignalEnd { tx: u32, index: u32 },
    /// A weak signal (delivered in bulk, `crate::phy`) arrives at or leaves `node` while it may
    /// tip the node's carrier sense; stale if `generation` is not the PHY's current one.
    WeakWake { node: u32, generation: u32 },
    /// A MAC timer of `node`; stale if `generation` is not the timer's current one.
    MacTimer {
        node: u32,
        kind: TimerKind,
        generation: u32,
    },
    /// A constant-bit-rate source of `flow` emits its next packet.
    AppSend { flow: u32 },
    /// `flow` becomes active (saturating sources fill their queue, TCP opens its connection).
    FlowStart { flow: u32 },
    /// A transport timer of connection `conn`; `kind` is the transport's own timer code (see
    /// `crate::world`), stale firings are ignored by the transport.
    TransportTimer { conn: u32, kind: u8 },
    /// `flow`'s application stops (a TCP sender stops sending).
    FlowStop { flow: u32 },
    /// The scenario's `index`-th scheduled change (`World::scenario_events`) takes effect.
    ScenarioChange { index: u32 },
    /// A network-layer protocol timer of `node`.
    NetTimer { node: u32, kind: NetTimerKind },
    /// An optimizer's timer (`tag`) or the delivery of its delayed events (`tag` = u32::MAX);
    /// no data-path work: the callback runs when the instant ends (`crate::tune::optimizer`).
    Optimizer { slot: u32, tag: u32 },
    /// DPCLO's periodic work: sources sample their queues, held packets are reconsidered.
    /// DCLO's matching interval starts (`crate::xl::dclo`).
    BackpressureTick,
    /// Injected noise source `source` switches on or off (`crate::phy::noise`).
    Noise { source: u32 },
    /// Wired link direction `link` finished serializing its head packet (`crate::mac::wired`).
    WiredTxEnd { link: u32 },
    /// Packet `packet` reaches the far end of wired link direction `link`.
    WiredArrive { link: u32, packet: u32 },
    /// A per-packet hook's optimizers are done with `packet` (ECLAIR's data-path delay): it
    /// goes on up its destination's stack (`World::sink`).
    HookRelease { packet: u32 },
    /// An `"auto"` Z-MAC set-up phase: is the slot assignment complete? (`mac::zmac::SetupWatch`)
    ZmacSetupCheck,
}
