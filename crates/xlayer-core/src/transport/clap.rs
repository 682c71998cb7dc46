//! CLAP, the Cross Layer Aware transport Protocol (CLAP slides, seed document 001): reliable
//! file transfer whose flow control and error control are decoupled.
//!
//! - **Flow control is rate-based** and reads the MAC instead of guessing from ACKs. The sender
//!   paces its packets at `min(b · m, p)`: `m` is its own MAC's sending rate
//!   (`mac.send_rate_bps`, bits over service time), `p` the path rate the last probe brought
//!   back, and `b ∈ [BOOST_MIN, BOOST_MAX]` a boost (1 at first) that rises by [`BOOST_STEP`]
//!   on every MAC queue underflow at the source (`mac.underflow`: the link could have sent
//!   more — the slides' "MAC underflow") and falls by the same step whenever the source's
//!   interface queue is found half full. A data packet leaves only when the interface queue has
//!   room for it and one more (the flow's next probe), so the sender never drops its own
//!   packets. A relay's rate is its MAC's shared among the flows it relays (see
//!   `crate::world`'s `relay_stamp`). The sender reads `m`, the queue and the PHY rate through the MAC
//!   tuning layer's declarations (the slides' register-and-pull framework is ECLAIR's tuning
//!   layers here) and is called on the underflow event it registers for; before the MAC's
//!   first sample `m` is the PHY data rate.
//! - **Probe packets (PP)** travel the path every `f` seconds: the probe leaves with an
//!   unbounded rate, each relay N stamps `min(PPrate, Nrate)` with its MAC sending rate shared
//!   among the flows it relays (`crate::world` does, through the relay's tuning layer), and the receiver returns the
//!   result. The source does not stamp its own rate: it reads it directly. Probes are clocked
//!   by their replies — the next probe leaves `f` after the reply arrives, or after
//!   [`probe_timeout`] if the probe or its reply is lost — so a probe round lasts `f + 2t + d`
//!   and the probe overhead of a flow is `16 p / (f + 2t + d)` bit/s for `p`-byte probes and
//!   replies: xlayer's reading of the slides' garbled "16p/f(2t+d)" (8 bits a byte, a probe and
//!   its reply a round; `t` the one-way transmission delay, `d` the relays' processing).
//! - **Error control by aggregate NACKs.** Every `nack_interval` the receiver reports the first
//!   packet it misses (`cum`), a bitmap of what it holds up to the highest packet received (one
//!   byte to the whole file), and the latest transmission it received (`echo_tx`), if anything
//!   arrived since its last NACK or it holds holes; a final NACK says the file is complete. The
//!   sender retransmits a missing packet once its latest transmission is older than the echoed
//!   one (it was overtaken, so it was lost), holes first; when it has nothing left to send it
//!   waits [`ClapSender::tail_timeout`] and then sends every packet not yet reported held again
//!   (losses at the tail, or NACKs lost in a noise burst). Bytes reach the application once and
//!   in order, and every delivered byte is checked against what the sender wrote.
//!
//! The slides give neither the estimator constants nor the intervals; the defaults of
//! [`ClapConfig`] and the constants below are xlayer's choices, each stated where it is set.

use std::collections::VecDeque;

use super::tcp::content_checksum;
use crate::sim::SimTime;
use crate::wire::clap::{ClapData, ClapNack, ClapProbe};

/// Boost step on each underflow and each half-full queue (1/16: sixteen underflows double the
/// rate; xlayer's choice, small against the MAC rate's own EWMA gain of 1/8).
pub const BOOST_STEP: f64 = 1.0 / 16.0;
/// Largest boost over the MAC's sending rate (xlayer's choice: the MAC rate of a busy link is
/// at most a few tens of percent below what it could carry).
pub const BOOST_MAX: f64 = 1.5;
/// Smallest boost: a queue that stays half full takes the rate down to half the MAC's, until
/// underflows bring it back (xlayer's choice, symmetric with [`BOOST_MAX`]).
pub const BOOST_MIN: f64 = 0.5;

/// A CLAP flow's settings (`flows[].clap` in a scenario).
#[derive(Debug, Clone, Copy)]
pub struct ClapConfig {
    /// File bytes per data packet.
    pub payload_bytes: u32,
    /// The file's size; `None`: a transfer that lasts as long as the flow.
    pub total_bytes: Option<u64>,
    /// Seconds between a probe's reply and the next probe (`f`).
    pub probe_interval: SimTime,
    /// IP bytes of a probe and of its reply (`p`; at least IPv4 + UDP + the CLAP header).
    pub probe_bytes: u32,
    /// Seconds between the receiver's NACKs.
    pub nack_interval: SimTime,
    /// A cap on the sending rate (the flow's `rate_bps`), if any.
    pub max_rate_bps: Option<f64>,
    /// Packets the sender may have beyond the receiver's first missing one (the receiver's
    /// buffer).
    pub max_outstanding: u32,
    /// Key of the file's bytes (see `transport::tcp::content_checksum`).
    pub stream_key: u64,
}

/// What the sender reads of its MAC (through the tuning layer) when it sends.
#[derive(Debug, Clone, Copy, Default)]
pub struct LinkStatus {
    /// `mac.send_rate_bps`: 0 before the first acknowledged frame.
    pub send_rate_bps: f64,
    /// The interface queue the flow's packets enter: packets in it and its capacity.
    pub queue_len: u32,
    pub queue_capacity: u32,
    /// The PHY data rate (`phy.data_rate_mbps`), in bit/s.
    pub data_rate_bps: f64,
}

/// The file's packet a slot of the sender's window stands for.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// The packet's latest transmission.
    last_tx: u32,
    /// Reported held by the receiver.
    held: bool,
    /// Waiting in the retransmission queue.
    queued: bool,
    /// Transmissions of the packet so far.
    sends: u32,
}

/// Counters of a CLAP flow (`flows.csv`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ClapStats {
    /// Data transmissions, and those of packets sent before.
    pub data_sent: u64,
    pub retransmits: u64,
    /// Tail timeouts: the sender resent what was not reported held.
    pub tail_timeouts: u64,
    pub nacks_received: u64,
    pub probes_sent: u64,
    pub probe_replies: u64,
    /// Sum of the probes' round trips (seconds) over `probe_replies`.
    pub probe_rtt_sum_s: f64,
    /// Sum and count of the sending rate at each send, for its mean.
    pub rate_sum_bps: f64,
    pub rate_samples: u64,
}

/// The sending side of a CLAP flow.
#[derive(Debug)]
pub struct ClapSender {
    cfg: ClapConfig,
    /// Packets of the file (`None`: unbounded).
    total: Option<u32>,
    next_new: u32,
    next_tx: u32,
    /// The first packet the receiver misses, as last reported; `slots[0]` stands for it.
    held_below: u32,
    slots: VecDeque<Slot>,
    /// Transmissions not yet passed by an echoed one: `(tx, seq)` in the order sent.
    in_flight: VecDeque<(u32, u32)>,
    retx: VecDeque<u32>,
    boost: f64,
    path_rate_bps: f64,
    rate_bps: f64,
    next_send: SimTime,
    last_send: SimTime,
    last_nack_id: Option<u32>,
    /// The probe in flight: its id and departure.
    probe_out: Option<(u32, SimTime)>,
    /// The newest probe whose reply was taken.
    last_reply_id: Option<u32>,
    next_probe_id: u32,
    next_probe: SimTime,
    srtt_s: Option<f64>,
    /// Slots not reported held.
    unheld: u32,
    done: bool,
    halted: bool,
    pub stats: ClapStats,
}

/// The probe timeout: a probe without a reply after this long is taken as lost and the next
/// one leaves — the probe interval plus four smoothed round trips (RFC 6298's `4 · RTTVAR`
/// margin, taken on the RTT itself), or 1 s (RFC 6298's initial RTO) before the first reply.
pub fn probe_timeout(srtt_s: Option<f64>, interval: SimTime) -> SimTime {
    match srtt_s {
        Some(s) => interval + SimTime::from_secs_f64(4.0 * s),
        None => SimTime::from_secs_f64(1.0),
    }
}

impl ClapSender {
    pub fn new(cfg: ClapConfig) -> ClapSender {
        let total = cfg
            .total_bytes
            .map(|b| b.div_ceil(cfg.payload_bytes as u64).min(u32::MAX as u64) as u32);
        ClapSender {
            cfg,
            total,
            next_new: 0,
            next_tx: 0,
            held_below: 0,
            slots: VecDeque::new(),
            in_flight: VecDeque::new(),
            retx: VecDeque::new(),
            boost: 1.0,
            path_rate_bps: f64::INFINITY,
            rate_bps: 0.0,
            next_send: SimTime::ZERO,
            last_send: SimTime::ZERO,
            last_nack_id: None,
            probe_out: None,
            last_reply_id: None,
            next_probe_id: 0,
            next_probe: SimTime::ZERO,
            srtt_s: None,
            unheld: 0,
            done: false,
            halted: false,
            stats: ClapStats::default(),
        }
    }

    pub fn config(&self) -> &ClapConfig {
        &self.cfg
    }

    /// The receiver reported the whole file held.
    pub fn done(&self) -> bool {
        self.done
    }

    /// Whether the sender still sends (not done, not stopped by the flow's stop time).
    pub fn active(&self) -> bool {
        !self.done && !self.halted
    }

    /// The flow stops: nothing more is sent.
    pub fn halt(&mut self) {
        self.halted = true;
    }

    /// The current sending rate (bit/s), 0 before the first send.
    pub fn rate_bps(&self) -> f64 {
        self.rate_bps
    }

    /// The path rate the last probe reply brought (infinite before one, or with no relay).
    pub fn path_rate_bps(&self) -> f64 {
        self.path_rate_bps
    }

    pub fn boost(&self) -> f64 {
        self.boost
    }

    pub fn srtt_s(&self) -> Option<f64> {
        self.srtt_s
    }

    /// Packets of the file (None: unbounded).
    pub fn total_packets(&self) -> Option<u32> {
        self.total
    }

    /// When the next packet may leave.
    pub fn next_send(&self) -> SimTime {
        self.next_send
    }

    /// When the next probe is due.
    pub fn next_probe(&self) -> SimTime {
        self.next_probe
    }

    /// How long the sender waits, with nothing left to send, before sending again what was not
    /// reported held: three NACK intervals and two probe round trips (xlayer's choice: a NACK
    /// may be lost, and one must have had time to come back).
    pub fn tail_timeout(&self) -> SimTime {
        let nacks = 3 * self.cfg.nack_interval.ns();
        let rtts = self.srtt_s.map_or(0, |s| (2.0 * s * 1e9) as u64);
        SimTime(nacks.max(rtts).max(1))
    }

    /// When the tail timeout would fire, if the sender is idle with packets not reported held.
    pub fn tail_deadline(&self) -> Option<SimTime> {
        (self.active() && !self.has_data() && self.outstanding() > 0)
            .then(|| self.last_send + self.tail_timeout())
    }

    /// Packets sent and not reported held.
    fn outstanding(&self) -> u32 {
        self.unheld
    }

    fn slot(&mut self, seq: u32) -> Option<&mut Slot> {
        seq.checked_sub(self.held_below)
            .and_then(|i| self.slots.get_mut(i as usize))
    }

    /// Whether a packet (new or a retransmission) waits to be sent.
    pub fn has_data(&self) -> bool {
        if !self.active() {
            return false;
        }
        let new = self.total.is_none_or(|t| self.next_new < t)
            && self.next_new - self.held_below < self.cfg.max_outstanding;
        new || !self.retx.is_empty()
    }

    /// Payload bytes of packet `seq` (the file's last packet may be short).
    pub fn packet_len(&self, seq: u32) -> u32 {
        Self::packet_len_of(&self.cfg, seq)
    }

    /// Sets the sending rate from the MAC's status: `min(b · m, p)`, capped by the flow's rate.
    fn update_rate(&mut self, link: &LinkStatus) {
        if link.queue_capacity > 0 && 2 * link.queue_len >= link.queue_capacity {
            self.boost = (self.boost - BOOST_STEP).max(BOOST_MIN);
        }
        let m = if link.send_rate_bps > 0.0 {
            link.send_rate_bps
        } else {
            link.data_rate_bps
        };
        let mut r = (self.boost * m).min(self.path_rate_bps);
        if let Some(cap) = self.cfg.max_rate_bps {
            r = r.min(cap);
        }
        self.rate_bps = r.max(1.0);
    }

    /// The MAC's interface queue ran empty while the link could send: raise the boost.
    pub fn on_underflow(&mut self) {
        if self.has_data() {
            self.boost = (self.boost + BOOST_STEP).min(BOOST_MAX);
        }
    }

    /// Sends the next packet if one is due, the rate allows and the interface queue has room:
    /// a retransmission first, else a new packet. Returns its header and payload length.
    pub fn poll_send(&mut self, now: SimTime, link: &LinkStatus) -> Option<(ClapData, u32)> {
        if !self.has_data() || now < self.next_send {
            return None;
        }
        self.update_rate(link);
        if link.queue_capacity > 0 && link.queue_len + 1 >= link.queue_capacity {
            // The interface queue is full but for the place kept for the flow's probes: try
            // again after one packet time.
            self.next_send = now + self.packet_time(self.cfg.payload_bytes);
            return None;
        }
        let seq = loop {
            match self.retx.pop_front() {
                Some(s) => {
                    if let Some(slot) = self.slot(s) {
                        slot.queued = false;
                        if !slot.held {
                            break s;
                        }
                    }
                }
                None => {
                    let s = self.next_new;
                    self.next_new += 1;
                    self.slots.push_back(Slot::default());
                    self.unheld += 1;
                    break s;
                }
            }
        };
        let tx = self.next_tx;
        self.next_tx = self.next_tx.wrapping_add(1);
        let slot = self.slot(seq).expect("a packet sent lies in the window");
        slot.last_tx = tx;
        slot.sends += 1;
        if slot.sends > 1 {
            self.stats.retransmits += 1;
        }
        let len = self.packet_len(seq);
        self.stats.data_sent += 1;
        self.stats.rate_sum_bps += self.rate_bps;
        self.stats.rate_samples += 1;
        self.in_flight.push_back((tx, seq));
        self.last_send = now;
        self.next_send = now + self.packet_time(len);
        let checksum = content_checksum(
            self.cfg.stream_key,
            seq as u64 * self.cfg.payload_bytes as u64,
            len,
        );
        Some((
            ClapData {
                seq,
                tx,
                checksum: fold(checksum),
            },
            len,
        ))
    }

    /// The time one packet takes at the current rate (its IP bytes: payload, IPv4, UDP and
    /// the CLAP header).
    fn packet_time(&self, payload: u32) -> SimTime {
        let bits = (payload + 44) as f64 * 8.0;
        SimTime::from_secs_f64(bits / self.rate_bps.max(1.0)).max(SimTime(1))
    }

    /// A NACK arrived with its bitmap (bit `i` of word `i / 64`, least significant first, for
    /// packet `cum + i`). Returns true if it told anything new.
    pub fn on_nack(&mut self, n: &ClapNack, bitmap: &[u64]) -> bool {
        if self.last_nack_id.is_some_and(|last| n.id <= last) {
            return false; // an older NACK overtaken by a newer one
        }
        self.last_nack_id = Some(n.id);
        self.stats.nacks_received += 1;
        if n.complete {
            self.done = true;
            self.retx.clear();
            self.slots.clear();
            self.in_flight.clear();
            self.held_below = self.next_new;
            self.unheld = 0;
            return true;
        }
        // Everything below `cum` is held.
        while self.held_below < n.cum {
            let Some(s) = self.slots.pop_front() else {
                break;
            };
            self.unheld -= !s.held as u32;
            self.held_below += 1;
        }
        for i in 0..n.end.saturating_sub(n.cum) {
            let held = bitmap
                .get((i / 64) as usize)
                .is_some_and(|w| w >> (i % 64) & 1 == 1);
            if held {
                if let Some(s) = self.slot(n.cum + i) {
                    if !s.held {
                        s.held = true;
                        self.unheld -= 1;
                    }
                }
            }
        }
        // Transmissions older than the echoed one that are still missing were lost.
        while let Some(&(tx, seq)) = self.in_flight.front() {
            if tx.wrapping_sub(n.echo_tx) as i32 > 0 {
                break;
            }
            self.in_flight.pop_front();
            if tx == n.echo_tx {
                continue;
            }
            if let Some(slot) = self.slot(seq) {
                if !slot.held && slot.last_tx == tx && !slot.queued {
                    slot.queued = true;
                    self.retx.push_back(seq);
                }
            }
        }
        true
    }

    /// The tail timeout fired: every packet sent and not reported held goes again.
    pub fn on_tail_timeout(&mut self, now: SimTime) -> bool {
        match self.tail_deadline() {
            Some(at) if now >= at => {}
            _ => return false,
        }
        self.stats.tail_timeouts += 1;
        let base = self.held_below;
        for (i, s) in self.slots.iter_mut().enumerate() {
            if !s.held && !s.queued {
                s.queued = true;
                self.retx.push_back(base + i as u32);
            }
        }
        self.next_send = self.next_send.min(now);
        true
    }

    /// A probe is due: returns it if none is in flight (or the one in flight timed out).
    pub fn poll_probe(&mut self, now: SimTime) -> Option<ClapProbe> {
        if !self.active() || now < self.next_probe {
            return None;
        }
        if let Some((_, sent)) = self.probe_out {
            if now < sent + probe_timeout(self.srtt_s, self.cfg.probe_interval) {
                self.next_probe = sent + probe_timeout(self.srtt_s, self.cfg.probe_interval);
                return None;
            }
        }
        let id = self.next_probe_id;
        self.next_probe_id += 1;
        self.probe_out = Some((id, now));
        self.next_probe = now + probe_timeout(self.srtt_s, self.cfg.probe_interval);
        self.stats.probes_sent += 1;
        Some(ClapProbe {
            id,
            rate_bps: f64::INFINITY,
            sent: now,
        })
    }

    /// A probe reply arrived: the path rate it carries replaces the last one, its round trip
    /// updates the smoothed RTT (RFC 6298's gain 1/8), and, if it answers the probe in flight,
    /// the next probe leaves `f` later. A reply to a probe already given up still counts (its
    /// round trip is a real one: dropping late replies would keep the RTT, and so the timeout,
    /// too short for a path whose queues have grown); one older than a reply already taken
    /// does not.
    pub fn on_probe_reply(&mut self, now: SimTime, r: &ClapProbe) {
        if self.last_reply_id.is_some_and(|last| r.id <= last) {
            return;
        }
        self.last_reply_id = Some(r.id);
        self.stats.probe_replies += 1;
        let rtt = (now - r.sent).as_secs_f64();
        self.stats.probe_rtt_sum_s += rtt;
        self.srtt_s = Some(match self.srtt_s {
            None => rtt,
            Some(s) => s + (rtt - s) / 8.0,
        });
        self.path_rate_bps = r.rate_bps;
        if self.probe_out.is_some_and(|(id, _)| id == r.id) {
            self.probe_out = None;
            self.next_probe = now + self.cfg.probe_interval;
        }
    }
}

/// Folds a 64-bit checksum to the header's 32 bits.
fn fold(x: u64) -> u32 {
    (x ^ (x >> 32)) as u32
}

/// The receiving side of a CLAP flow.
#[derive(Debug)]
pub struct ClapReceiver {
    cfg: ClapConfig,
    total: Option<u32>,
    /// The first packet not yet held.
    cum: u32,
    /// Held packets from `base` (a multiple of 64, at most `cum`), a bit each.
    base: u32,
    bits: VecDeque<u64>,
    /// One past the highest packet held.
    end: u32,
    echo_tx: u32,
    got_data: bool,
    news_since_nack: bool,
    next_nack_id: u32,
    nack_due: Option<SimTime>,
    complete_sent: Option<SimTime>,
    pub delivered_bytes: u64,
    pub completed_at: Option<SimTime>,
    pub stream_errors: u64,
    pub duplicates: u64,
    pub nacks_sent: u64,
}

impl ClapReceiver {
    pub fn new(cfg: ClapConfig) -> ClapReceiver {
        let s = ClapSender::new(cfg);
        ClapReceiver {
            cfg,
            total: s.total,
            cum: 0,
            base: 0,
            bits: VecDeque::new(),
            end: 0,
            echo_tx: 0,
            got_data: false,
            news_since_nack: false,
            next_nack_id: 0,
            nack_due: None,
            complete_sent: None,
            delivered_bytes: 0,
            completed_at: None,
            stream_errors: 0,
            duplicates: 0,
            nacks_sent: 0,
        }
    }

    pub fn complete(&self) -> bool {
        self.completed_at.is_some()
    }

    /// When the NACK timer is due, if it runs.
    pub fn nack_due(&self) -> Option<SimTime> {
        self.nack_due
    }

    fn held(&self, seq: u32) -> bool {
        if seq < self.cum {
            return true;
        }
        let i = seq - self.base;
        self.bits
            .get((i / 64) as usize)
            .is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    fn set(&mut self, seq: u32) {
        let i = seq - self.base;
        let word = (i / 64) as usize;
        while self.bits.len() <= word {
            self.bits.push_back(0);
        }
        self.bits[word] |= 1 << (i % 64);
    }

    /// Data packet `d` with `len` payload bytes arrived. Pushes the lengths of the packets now
    /// delivered in order onto `delivered`; returns a NACK to send at once (the file just
    /// completed, or a duplicate arrived after completion and the last final NACK is older
    /// than a NACK interval).
    pub fn on_data(
        &mut self,
        now: SimTime,
        d: &ClapData,
        len: u32,
        delivered: &mut Vec<u32>,
    ) -> Option<ClapNack> {
        let first = !self.got_data;
        self.got_data = true;
        if first {
            self.nack_due = Some(now + self.cfg.nack_interval);
        }
        if self.complete() || self.held(d.seq) || self.total.is_some_and(|t| d.seq >= t) {
            self.duplicates += 1;
            let again = self
                .complete_sent
                .is_none_or(|t| now >= t + self.cfg.nack_interval);
            if self.complete() && again {
                return Some(self.final_nack(now));
            }
            return None;
        }
        let want = fold(content_checksum(
            self.cfg.stream_key,
            d.seq as u64 * self.cfg.payload_bytes as u64,
            len,
        ));
        if want != d.checksum {
            self.stream_errors += 1;
        }
        self.news_since_nack = true;
        if d.tx.wrapping_sub(self.echo_tx) as i32 > 0 || first {
            self.echo_tx = d.tx;
        }
        self.set(d.seq);
        self.end = self.end.max(d.seq + 1);
        while self.held(self.cum) && self.cum < self.end {
            let seq = self.cum;
            let l = ClapSender::packet_len_of(&self.cfg, seq);
            self.delivered_bytes += l as u64;
            delivered.push(l);
            self.cum += 1;
        }
        // Drop whole words below `cum`.
        while self.cum - self.base >= 64 && !self.bits.is_empty() {
            self.bits.pop_front();
            self.base += 64;
        }
        if self.total.is_some_and(|t| self.cum >= t) {
            self.completed_at = Some(now);
            self.nack_due = None;
            return Some(self.final_nack(now));
        }
        None
    }

    fn final_nack(&mut self, now: SimTime) -> ClapNack {
        self.complete_sent = Some(now);
        self.nacks_sent += 1;
        let id = self.next_nack_id;
        self.next_nack_id += 1;
        ClapNack {
            id,
            cum: self.cum,
            end: self.cum,
            echo_tx: self.echo_tx,
            complete: true,
        }
    }

    /// The NACK timer fired: returns the NACK to send (if anything arrived since the last one,
    /// or packets are missing), writing its bitmap into `bitmap` (bit `i` for packet
    /// `cum + i`), and re-arms the timer while `running`.
    pub fn on_nack_timer(
        &mut self,
        now: SimTime,
        running: bool,
        bitmap: &mut Vec<u64>,
    ) -> Option<ClapNack> {
        match self.nack_due {
            Some(at) if now >= at => {}
            _ => return None,
        }
        self.nack_due = running.then(|| now + self.cfg.nack_interval);
        if self.complete() || !(self.news_since_nack || self.cum < self.end) {
            return None;
        }
        self.news_since_nack = false;
        bitmap.clear();
        let span = self.end - self.cum;
        bitmap.resize(span.div_ceil(64) as usize, 0);
        for i in 0..span {
            if self.held(self.cum + i) {
                bitmap[(i / 64) as usize] |= 1 << (i % 64);
            }
        }
        self.nacks_sent += 1;
        let id = self.next_nack_id;
        self.next_nack_id += 1;
        Some(ClapNack {
            id,
            cum: self.cum,
            end: self.end,
            echo_tx: self.echo_tx,
            complete: false,
        })
    }
}

impl ClapSender {
    fn packet_len_of(cfg: &ClapConfig, seq: u32) -> u32 {
        match cfg.total_bytes {
            Some(total) => {
                let off = seq as u64 * cfg.payload_bytes as u64;
                (total - off).min(cfg.payload_bytes as u64) as u32
            }
            None => cfg.payload_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(total: Option<u64>) -> ClapConfig {
        ClapConfig {
            payload_bytes: 1000,
            total_bytes: total,
            probe_interval: SimTime::from_secs_f64(0.1),
            probe_bytes: 44,
            nack_interval: SimTime::from_secs_f64(0.05),
            max_rate_bps: None,
            max_outstanding: 8192,
            stream_key: 7,
        }
    }

    /// A link that always has room and sends at 8 Mbit/s (1000 payload bytes in about 1 ms).
    fn link() -> LinkStatus {
        LinkStatus {
            send_rate_bps: 8e6,
            queue_len: 0,
            queue_capacity: 50,
            data_rate_bps: 11e6,
        }
    }

    /// Sends every packet the sender has due at `now`, ignoring pacing.
    fn send_all(s: &mut ClapSender, now: SimTime, n: usize) -> Vec<(ClapData, u32)> {
        let mut out = vec![];
        for _ in 0..n {
            s.next_send = now;
            match s.poll_send(now, &link()) {
                Some(p) => out.push(p),
                None => break,
            }
        }
        out
    }

    /// The bitmap of a NACK as the receiver would write it: bit `i` for `cum + i`.
    fn bitmap(cum: u32, held: &[u32]) -> Vec<u64> {
        let mut b = vec![0u64; 4];
        for &h in held {
            let i = h - cum;
            b[(i / 64) as usize] |= 1 << (i % 64);
        }
        b
    }

    #[test]
    fn a_file_is_cut_into_packets_whose_last_one_is_short() {
        let mut s = ClapSender::new(cfg(Some(2500)));
        assert_eq!(s.total_packets(), Some(3));
        let sent = send_all(&mut s, SimTime::ZERO, 10);
        let lens: Vec<u32> = sent.iter().map(|p| p.1).collect();
        assert_eq!(lens, [1000, 1000, 500]);
        assert!(!s.has_data(), "three packets make the file");
    }

    #[test]
    fn the_receiver_delivers_every_byte_once_and_in_order() {
        let c = cfg(Some(4500));
        let mut s = ClapSender::new(c);
        let mut r = ClapReceiver::new(c);
        let sent = send_all(&mut s, SimTime::ZERO, 10);
        assert_eq!(sent.len(), 5);
        let mut delivered = vec![];
        // Packets 2, 0, 4, 0 again, 1, 3: deliveries happen as the prefix grows.
        for (i, k) in [2usize, 0, 4, 0, 1].into_iter().enumerate() {
            let (d, len) = sent[k];
            assert!(r
                .on_data(SimTime(i as u64), &d, len, &mut delivered)
                .is_none());
        }
        assert_eq!(delivered, [1000, 1000, 1000]);
        assert_eq!(r.duplicates, 1);
        let (d, len) = sent[3];
        let fin = r
            .on_data(SimTime(9), &d, len, &mut delivered)
            .expect("complete");
        assert!(fin.complete);
        assert_eq!(fin.cum, 5);
        assert_eq!(delivered, [1000, 1000, 1000, 1000, 500]);
        assert_eq!(r.delivered_bytes, 4500);
        assert_eq!(r.stream_errors, 0);
        assert_eq!(r.completed_at, Some(SimTime(9)));
    }

    #[test]
    fn a_packet_with_the_wrong_bytes_is_counted_as_a_stream_error() {
        let c = cfg(Some(1000));
        let mut s = ClapSender::new(c);
        let mut r = ClapReceiver::new(c);
        let (mut d, len) = send_all(&mut s, SimTime::ZERO, 1)[0];
        d.checksum ^= 1;
        r.on_data(SimTime::ZERO, &d, len, &mut vec![]);
        assert_eq!(r.stream_errors, 1);
    }

    #[test]
    fn a_hole_is_resent_once_a_later_transmission_arrived_not_before() {
        let mut s = ClapSender::new(cfg(Some(10_000)));
        let sent = send_all(&mut s, SimTime::ZERO, 5);
        assert_eq!(
            sent.iter().map(|p| p.0.tx).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
        // The receiver holds 0, 2 and 3 (its latest transmission is 3); 1 was lost, 4 is still
        // on its way.
        let nack = ClapNack {
            id: 0,
            cum: 1,
            end: 4,
            echo_tx: 3,
            complete: false,
        };
        assert!(s.on_nack(&nack, &bitmap(1, &[2, 3])));
        let next = send_all(&mut s, SimTime(1), 1)[0].0;
        assert_eq!(
            (next.seq, next.tx),
            (1, 5),
            "the hole goes first, as a new transmission"
        );
        assert_eq!(s.stats.retransmits, 1);
        // Then new data: packet 4 was not taken for lost.
        assert_eq!(send_all(&mut s, SimTime(2), 1)[0].0.seq, 5);
        // An older NACK arriving late is ignored.
        assert!(!s.on_nack(&nack, &bitmap(1, &[2, 3])));
    }

    #[test]
    fn a_retransmission_lost_again_is_resent_again() {
        let mut s = ClapSender::new(cfg(Some(3000)));
        send_all(&mut s, SimTime::ZERO, 3); // tx 0, 1, 2
        let n0 = ClapNack {
            id: 0,
            cum: 0,
            end: 3,
            echo_tx: 2,
            complete: false,
        };
        s.on_nack(&n0, &bitmap(0, &[1, 2]));
        assert_eq!(send_all(&mut s, SimTime(1), 1)[0].0.tx, 3); // packet 0 again
                                                                // The next NACK still misses 0 and echoes transmission 2 again: the retransmission
                                                                // (3) may still be in flight, so nothing is resent yet.
        let n1 = ClapNack { id: 1, ..n0 };
        s.on_nack(&n1, &bitmap(0, &[1, 2]));
        assert!(!s.has_data(), "the retransmission may still be in flight");
        // No later transmission will overtake it (the file is all sent): the tail timeout
        // resends it.
        let at = s.tail_deadline().expect("idle with a packet not held");
        assert!(s.on_tail_timeout(at));
        assert_eq!(send_all(&mut s, at, 1)[0].0.seq, 0);
        assert_eq!(s.stats.tail_timeouts, 1);
        assert_eq!(s.stats.retransmits, 2);
    }

    #[test]
    fn the_final_nack_ends_the_transfer() {
        let mut s = ClapSender::new(cfg(Some(2000)));
        send_all(&mut s, SimTime::ZERO, 2);
        let fin = ClapNack {
            id: 0,
            cum: 2,
            end: 2,
            echo_tx: 1,
            complete: true,
        };
        s.on_nack(&fin, &[]);
        assert!(s.done());
        assert!(!s.has_data());
        assert_eq!(s.tail_deadline(), None);
        assert!(s.poll_probe(SimTime(10)).is_none());
    }

    #[test]
    fn the_rate_follows_the_mac_rate_boosted_by_underflows_and_capped_by_the_path() {
        let mut s = ClapSender::new(cfg(None));
        let mut l = link();
        s.poll_send(SimTime::ZERO, &l).unwrap();
        assert_eq!(s.rate_bps(), 8e6);
        for _ in 0..4 {
            s.on_underflow();
        }
        s.next_send = SimTime(1);
        s.poll_send(SimTime(1), &l).unwrap();
        assert!((s.rate_bps() - 8e6 * 1.25).abs() < 1e-6, "{}", s.rate_bps());
        for _ in 0..100 {
            s.on_underflow();
        }
        assert_eq!(s.boost(), BOOST_MAX);
        // A half-full interface queue takes a step back.
        l.queue_len = 25;
        s.next_send = SimTime(2);
        s.poll_send(SimTime(2), &l).unwrap();
        assert_eq!(s.boost(), BOOST_MAX - BOOST_STEP);
        // A probe reply with a slower relay caps the rate.
        let p = s.poll_probe(SimTime(3)).unwrap();
        s.on_probe_reply(SimTime(3_000_003), &ClapProbe { rate_bps: 2e6, ..p });
        s.next_send = SimTime(4_000_000);
        s.poll_send(SimTime(4_000_000), &l).unwrap();
        assert_eq!(s.rate_bps(), 2e6);
        assert_eq!(s.srtt_s(), Some(0.003));
        // Before the MAC's first sample, the PHY rate.
        let mut t = ClapSender::new(cfg(None));
        t.poll_send(
            SimTime::ZERO,
            &LinkStatus {
                send_rate_bps: 0.0,
                ..link()
            },
        )
        .unwrap();
        assert_eq!(t.rate_bps(), 11e6);
    }

    #[test]
    fn nothing_is_sent_into_a_full_interface_queue() {
        let mut s = ClapSender::new(cfg(None));
        let full = LinkStatus {
            queue_len: 50,
            ..link()
        };
        assert!(s.poll_send(SimTime::ZERO, &full).is_none());
        assert!(
            s.next_send() > SimTime::ZERO,
            "it tries again a packet time later"
        );
        s.next_send = SimTime::ZERO;
        assert!(s.poll_send(SimTime::ZERO, &link()).is_some());
    }

    #[test]
    fn probes_are_clocked_by_their_replies_or_their_timeout() {
        let mut s = ClapSender::new(cfg(None));
        let p0 = s
            .poll_probe(SimTime::ZERO)
            .expect("the first probe leaves at once");
        assert!(
            s.poll_probe(SimTime::from_secs_f64(0.5)).is_none(),
            "one in flight"
        );
        // Its reply after 10 ms: the next one f = 0.1 s later.
        s.on_probe_reply(SimTime::from_secs_f64(0.01), &p0);
        assert_eq!(s.next_probe(), SimTime::from_secs_f64(0.11));
        let p1 = s.poll_probe(SimTime::from_secs_f64(0.11)).unwrap();
        assert_eq!(p1.id, 1);
        // Lost: after the timeout (f + 4 RTT = 0.14 s) another one goes.
        let timeout = probe_timeout(s.srtt_s(), SimTime::from_secs_f64(0.1));
        assert_eq!(timeout, SimTime::from_secs_f64(0.14));
        let sent = SimTime::from_secs_f64(0.11);
        assert!(s.poll_probe(sent + timeout - SimTime(1)).is_none());
        assert_eq!(s.poll_probe(sent + timeout).unwrap().id, 2);
        // A late reply to the given-up probe still gives its round trip and path rate, but
        // does not clock the next probe; an older reply after it is ignored.
        s.on_probe_reply(
            SimTime::from_secs_f64(0.31),
            &ClapProbe {
                rate_bps: 3e6,
                ..p1
            },
        );
        assert_eq!(s.stats.probe_replies, 2);
        assert_eq!(s.path_rate_bps(), 3e6);
        assert!(s.srtt_s().unwrap() > 0.01);
        s.on_probe_reply(SimTime::from_secs_f64(0.32), &p0);
        assert_eq!(s.stats.probe_replies, 2);
    }

    #[test]
    fn the_receiver_nacks_holes_on_its_timer_with_a_bitmap_of_what_it_holds() {
        let c = cfg(Some(10_000));
        let mut s = ClapSender::new(c);
        let mut r = ClapReceiver::new(c);
        let sent = send_all(&mut s, SimTime::ZERO, 10);
        for k in [0usize, 1, 3, 6] {
            r.on_data(SimTime(1), &sent[k].0, sent[k].1, &mut vec![]);
        }
        let due = r.nack_due().expect("armed by the first packet");
        assert_eq!(due, SimTime(1) + c.nack_interval);
        let mut b = vec![];
        let n = r.on_nack_timer(due, true, &mut b).expect("holes to report");
        assert_eq!((n.cum, n.end, n.echo_tx, n.complete), (2, 7, 6, false));
        assert_eq!(n.bitmap_bytes(), 1);
        assert_eq!(b, [0b10010]); // 3 and 6 held, from 2
                                  // The sender learns 2, 4 and 5 were lost (all older than transmission 6).
        s.on_nack(&n, &b);
        let again: Vec<u32> = send_all(&mut s, SimTime(2), 3)
            .iter()
            .map(|p| p.0.seq)
            .collect();
        assert_eq!(again, [2, 4, 5]);
        // Nothing new and the holes still there: the timer reports them again.
        let n2 = r
            .on_nack_timer(due + c.nack_interval, true, &mut b)
            .unwrap();
        assert_eq!(n2.id, n.id + 1);
        // A stopped flow's receiver stops its timer.
        assert!(r
            .on_nack_timer(due + c.nack_interval + c.nack_interval, false, &mut b)
            .is_some());
        assert_eq!(r.nack_due(), None);
    }
}
