//! The `[stack]` section: the protocol stack presets ([`PRESETS`], [`Stack`]) and the options of
//! the DiffQ, DPCLO, DCLO and Fusion presets ([`DiffqOptions`], [`DpcloOptions`], [`DcloOptions`],
//! [`FusionOptions`]) with their constants, and their validation: each options table checks its
//! own values (`validate` beside each type), read only under its own preset.
//!
//! Applying a preset (`Scenario::apply_preset`, the first step of validation) writes into other
//! sections (the MAC access, routing and queueing of `[mac]` and `[net]`, every flow's transport),
//! so it is a `Scenario` method; it lives here, beside the presets it applies. The one check that
//! needs another section, multi-path DiffQ against `net.routing = "olsr"`, stays in it.

use serde::{Deserialize, Serialize};

use super::check::{at_least_1us, bad, default_from_serde, positive, yes};
use super::flows::{ClapOptions, RateSpec, TcpOptions, MAX_PACKETS_PER_S};
use super::net::{DsdvConfig, EtxConfig};
use super::schema::Scenario;
use crate::error::XlError;

default_from_serde!(
    FusionOptions,
    DpcloOptions,
    DcloOptions,
    DiffqOptions,
    MoreOptions
);

/// Protocol stacks a scenario can name in `stack.preset`.
pub const PRESETS: [&str; 18] = [
    "udp-dcf",
    "udp",
    "tcp-reno",
    "tcp-newreno",
    "tcp-sack",
    "tcp-westwood",
    "tcp-few",
    "tfrc",
    "tfrc-ecn",
    "clap",
    "diffq-udp",
    "diffq-tcp",
    "dpclo-zmacplus",
    "dpclo-80211e",
    "dclo",
    "fusion",
    "more",
    "diffq-more",
];

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stack {
    #[serde(default = "Stack::default_preset")]
    pub preset: String,
    /// DiffQ settings (`stack.diffq`), with the `diffq-udp` and `diffq-tcp` presets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diffq: Option<DiffqOptions>,
    /// DPCLO settings (`stack.dpclo`), with the `dpclo-zmacplus` and `dpclo-80211e` presets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpclo: Option<DpcloOptions>,
    /// Fusion settings (`stack.fusion`), with the `fusion` preset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fusion: Option<FusionOptions>,
    /// DCLO settings (`stack.dclo`), with the `dclo` preset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dclo: Option<DcloOptions>,
    /// MORE settings (`stack.more`), with the `more` and `diffq-more` presets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more: Option<MoreOptions>,
    /// The flavor-aware link layer (`[stack.flavor_link]`, seed document 003): passive TCP
    /// flavor detection at its nodes and, unless `optimize = false`, the `flavor_link`
    /// optimizer setting each flow's code rate and retry limit there. Under any preset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flavor_link: Option<FlavorLinkOptions>,
}

/// `[stack.flavor_link]`: where flavors are detected and whether the link layer follows them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FlavorLinkOptions {
    /// The nodes that detect (the access point); default node 0, the access point of
    /// `topology.kind = "access_point"` (required with other topologies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<u32>>,
    /// Set each flow's (code rate, retry limit) from its detected flavor; false: detect and
    /// report only.
    #[serde(default = "yes")]
    pub optimize: bool,
    /// Entries of the document's table to replace: `reno = ["1/3", 4]` (see
    /// `tune::flavor_link`).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub table: serde_json::Map<String, serde_json::Value>,
}

/// Fusion's parameters (`xl::fusion`; Hull et al., SenSys 2004). The paper's abstract and the
/// DPCLO document confirm the three techniques only; which defaults are the paper as recalled
/// (unconfirmed) and which are xlayer's choices is said per field and in `xl::fusion`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FusionOptions {
    /// Hop-by-hop flow control by the congestion bit.
    #[serde(default = "yes")]
    pub flow_control: bool,
    /// Source rate limiting when transit traffic exists.
    #[serde(default = "yes")]
    pub rate_limit: bool,
    /// Congested nodes contend with the contention window divided by `cw_divisor`.
    #[serde(default = "yes")]
    pub prioritized_mac: bool,
    /// Congested while the interface queue holds at least this fraction of `mac.queue_packets`
    /// (0.75: the paper's high-water mark of a quarter free, as recalled; not confirmed).
    #[serde(default = "FusionOptions::default_threshold")]
    pub queue_threshold: f64,
    /// A neighbour's overheard congestion bit counts as clear after this long unheard (1 s:
    /// xlayer's choice).
    #[serde(default = "FusionOptions::default_one_second")]
    pub bit_expiry_s: f64,
    /// Window over which a node counts the distinct sources its parent (or it) forwards for
    /// (1 s: xlayer's choice).
    #[serde(default = "FusionOptions::default_one_second")]
    pub source_window_s: f64,
    /// Token bucket depth of a source's own packets (2: xlayer's choice).
    #[serde(default = "FusionOptions::default_bucket")]
    pub token_bucket: f64,
    /// Contention window divisor of a congested node (4: the paper's quarter window, as
    /// recalled; not confirmed).
    #[serde(default = "FusionOptions::default_divisor")]
    pub cw_divisor: u32,
}

impl FusionOptions {
    fn default_threshold() -> f64 {
        0.75
    }
    fn default_one_second() -> f64 {
        1.0
    }
    fn default_bucket() -> f64 {
        2.0
    }
    fn default_divisor() -> u32 {
        4
    }
}

/// DPCLO's parameters (`xl::dpclo`): Table I's values where it gives them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DpcloOptions {
    /// L_lowmark and L_highmark (Table I: 2 and 2 packets).
    #[serde(default = "DpcloOptions::default_mark")]
    pub l_lowmark: u32,
    #[serde(default = "DpcloOptions::default_mark")]
    pub l_highmark: u32,
    /// β of K's cap `ceil(β·N)` (Table I: 0.1).
    #[serde(default = "DpcloOptions::default_beta")]
    pub beta: f64,
    /// The source's queue sampling interval (not in the document: 0.1 s).
    #[serde(default = "DpcloOptions::default_interval")]
    pub update_interval_s: f64,
    /// δ, the additive probe per sample with an unchanged queue (not in the document: 10
    /// packets/s, a tenth of a 200-byte source's share of 2 Mbit/s among a few flows).
    #[serde(default = "DpcloOptions::default_delta")]
    pub delta_pps: f64,
    /// A source's starting rate (packets/s).
    #[serde(default = "DpcloOptions::default_initial")]
    pub initial_rate_pps: f64,
    /// An upper bound on K besides `ceil(β·N)`: 1 restricts DPCLO to its single DSDV-ETX next
    /// hop per destination (the "single path" variant of §V-C, Fig. 3); absent, no bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k_max: Option<u32>,
    /// Link awareness (§V-C.2, Fig. 4): `true` routes by DSDV-ETX and divides the price by the
    /// link's ETX (eq. 7); `false` is the document's comparison point, "without ETX": DSDV
    /// counts hops and eq. 7 takes ETX = 1 for every link.
    #[serde(default = "DpcloOptions::default_etx")]
    pub etx: bool,
}

impl DpcloOptions {
    fn default_etx() -> bool {
        true
    }
    fn default_mark() -> u32 {
        2
    }
    fn default_beta() -> f64 {
        0.1
    }
    fn default_interval() -> f64 {
        0.1
    }
    fn default_delta() -> f64 {
        10.0
    }
    fn default_initial() -> f64 {
        10.0
    }
}

/// DCLO's parameters (`xl::dclo`). The DPCLO document gives none beyond Table I (3-packet
/// per-destination queues); Chen et al.'s matching interval and message formats are not in it,
/// so every timing here is xlayer's choice (docs/scenario.md, `stack.dclo`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DcloOptions {
    /// The MAC DCLO runs over: "zmac" (default), "zmacplus", "802.11e" or "dcf" (the document
    /// implemented DCLO over Z-MAC, ZMAC+ and 802.11e).
    #[serde(default = "DcloOptions::default_mac")]
    pub mac: String,
    /// The matching interval: prices, matching and forwarding repeat every interval.
    #[serde(default = "DcloOptions::default_interval")]
    pub interval_s: f64,
    /// Every node broadcasts its PRICE at a uniform random time this long after the interval
    /// starts.
    #[serde(default = "DcloOptions::default_jitter")]
    pub price_jitter_s: f64,
    /// When nodes compute their link weights and start matching, after the interval starts.
    #[serde(default = "DcloOptions::default_match_delay")]
    pub match_delay_s: f64,
    /// A REQUEST without an answer is repeated after this long ...
    #[serde(default = "DcloOptions::default_timeout")]
    pub request_timeout_s: f64,
    /// ... up to this many REQUESTs per node and interval.
    #[serde(default = "DcloOptions::default_requests")]
    pub max_requests: u32,
    /// w of the sources' utility `U(x) = w·ln x` (eq. 2: rate `w / p` packets/s at price p
    /// packets).
    #[serde(default = "DcloOptions::default_weight")]
    pub utility_weight: f64,
    /// The slowest a source goes (packets/s).
    #[serde(default = "DcloOptions::default_min_rate")]
    pub min_rate_pps: f64,
}

impl DcloOptions {
    fn default_mac() -> String {
        "zmac".into()
    }
    fn default_interval() -> f64 {
        0.1
    }
    fn default_jitter() -> f64 {
        0.02
    }
    fn default_match_delay() -> f64 {
        0.03
    }
    fn default_timeout() -> f64 {
        0.01
    }
    fn default_requests() -> u32 {
        3
    }
    fn default_weight() -> f64 {
        300.0
    }
    fn default_min_rate() -> f64 {
        1.0
    }
}

/// The MACs DCLO runs over (`stack.dclo.mac`).
pub const DCLO_MACS: [&str; 4] = ["zmac", "zmacplus", "802.11e", "dcf"];

/// DSDV next hops kept per destination under the DPCLO presets: K adapts within them.
pub const DPCLO_DSDV_NEXT_HOPS: u32 = 4;

/// DiffQ's parameters (`xl::diffq`); defaults from the document where it gives them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DiffqOptions {
    /// §6.4's ablation: "full" (rate control, differential scheduling, MAC priorities),
    /// "rate_scheduling" (priority 0), "rate_only" (round-robin scheduling, priority 0).
    #[serde(default = "DiffqOptions::default_mode")]
    pub mode: String,
    /// "aimd" (the document's pseudo-code) or "log_utility".
    #[serde(default = "DiffqOptions::default_rate_control")]
    pub rate_control: String,
    /// AIMD additive increase per packet (Mbit/s; §6.1: 0.01).
    #[serde(default = "DiffqOptions::default_alpha")]
    pub alpha_mbps: f64,
    /// AIMD multiplicative decrease (§6.1: 0.5).
    #[serde(default = "DiffqOptions::default_beta")]
    pub beta: f64,
    /// QUEUE_THRESH: the source's own queue length above which its rate falls.
    #[serde(default = "DiffqOptions::default_thresh")]
    pub queue_thresh: u32,
    /// A source's starting rate (bit/s); default a tenth of the data rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_rate_bps: Option<f64>,
    /// A neighbour's overheard queue length is forgotten (taken as 0) after this long: queue
    /// state is soft (§4), and a neighbour whose queue drained sends no more packets to say so.
    #[serde(default = "DiffqOptions::default_expiry")]
    pub neighbour_expiry_s: f64,
    /// Under `mode = "full"`: a packet whose differential is negative (the next hop's queue for
    /// its destination is longer) waits instead of going out at priority 0; see
    /// `crate::xl::diffq::may_send`.
    #[serde(default = "DiffqOptions::default_hold_negative")]
    pub hold_negative: bool,
    /// Candidate forwarders per destination (the document's F_ip, eq. 2): 1 is single-path
    /// DiffQ over the routing next hop; K > 1 takes DSDV-ETX's K best next hops (routing
    /// becomes DSDV); see `crate::xl::diffq::differential`.
    #[serde(default = "DiffqOptions::default_next_hops")]
    pub next_hops: u32,
}

impl DiffqOptions {
    fn default_mode() -> String {
        "full".into()
    }
    /// Not in the document: 1 s, long enough that a backlogged neighbour is heard many times
    /// over in between (it sends hundreds of frames a second).
    fn default_expiry() -> f64 {
        1.0
    }
    fn default_rate_control() -> String {
        "aimd".into()
    }
    fn default_hold_negative() -> bool {
        true
    }
    fn default_next_hops() -> u32 {
        1
    }
    fn default_alpha() -> f64 {
        0.01
    }
    fn default_beta() -> f64 {
        0.5
    }
    /// Not in the document: half a priority step (D/Δ = 50/8 packets), so a source that keeps
    /// its own queue under the threshold never outranks a relay whose queue has built up.
    /// Measured: 8 and 16 give lower Jain indices at scale (docs/scenario.md).
    fn default_thresh() -> u32 {
        4
    }
}

/// MORE's parameters (`xl::more`; Chachulski et al., SIGCOMM 2007).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MoreOptions {
    /// K, native packets per batch (MORE and the DiffQ document: 32).
    #[serde(default = "MoreOptions::default_batch")]
    pub batch_size: u32,
    /// Forwarders expected to make less than this share of a batch's transmissions are pruned
    /// (MORE as recalled: 0.1; 0 keeps every node closer to the destination than the source).
    #[serde(default = "MoreOptions::default_prune")]
    pub prune_threshold: f64,
}

impl MoreOptions {
    fn default_batch() -> u32 {
        crate::wire::more::MAX_BATCH as u32
    }
    fn default_prune() -> f64 {
        crate::xl::more::PRUNE_THRESHOLD
    }

    /// Checks MORE's parameters (with the `more` and `diffq-more` presets).
    fn validate(&self) -> Result<(), XlError> {
        let max = crate::wire::more::MAX_BATCH as u32;
        if self.batch_size == 0 || self.batch_size > max {
            return Err(bad(
                "stack.more.batch_size",
                format!(
                    "must be 1..={max} native packets, found {}",
                    self.batch_size
                ),
            ));
        }
        if !(self.prune_threshold >= 0.0 && self.prune_threshold < 1.0) {
            return Err(bad(
                "stack.more.prune_threshold",
                format!("must be in [0, 1), found {}", self.prune_threshold),
            ));
        }
        Ok(())
    }
}

/// The largest payload a MORE flow may carry: the 802.11 MSDU (2304 bytes) less LLC/SNAP (8),
/// IPv4 and UDP (28), the per-destination queueing's header (13) and the longest MORE header
/// (12 + 32 code vector bytes + 6 for each of up to 64 forwarders).
pub const MORE_MAX_PAYLOAD: u32 = 2304
    - 8
    - 28
    - crate::net::queue::HEADER_BYTES
    - crate::wire::more::CODED_BASE_BYTES
    - crate::wire::more::MAX_BATCH as u32
    - crate::wire::more::FORWARDER_BYTES * crate::xl::more::MAX_FORWARDERS as u32;

/// Per-destination queue size D of the DiffQ presets (the document does not give it; 50 is
/// ns-2's interface queue, so a DiffQ node buffers per destination what a FIFO node buffers).
pub const DIFFQ_QUEUE_PACKETS: u32 = 50;

impl Stack {
    fn default_preset() -> String {
        "udp-dcf".into()
    }
}

impl Default for Stack {
    fn default() -> Self {
        Stack {
            preset: Stack::default_preset(),
            diffq: None,
            dpclo: None,
            fusion: None,
            dclo: None,
            more: None,
            flavor_link: None,
        }
    }
}

impl FusionOptions {
    /// Checks Fusion's parameters (with the `fusion` preset).
    fn validate(&self) -> Result<(), XlError> {
        let f = self;
        if !(f.queue_threshold > 0.0 && f.queue_threshold <= 1.0) {
            return Err(bad(
                "stack.fusion.queue_threshold",
                format!("must be in (0, 1], found {}", f.queue_threshold),
            ));
        }
        positive("stack.fusion.bit_expiry_s", f.bit_expiry_s)?;
        positive("stack.fusion.source_window_s", f.source_window_s)?;
        if f.token_bucket.is_nan() || f.token_bucket < 1.0 {
            return Err(bad(
                "stack.fusion.token_bucket",
                format!("must be at least 1 token, found {}", f.token_bucket),
            ));
        }
        if f.cw_divisor == 0 {
            return Err(bad("stack.fusion.cw_divisor", "must be at least 1"));
        }
        Ok(())
    }
}

impl DpcloOptions {
    /// Checks DPCLO's parameters (with the `dpclo-*` presets).
    fn validate(&self) -> Result<(), XlError> {
        let d = self;
        if !(d.beta > 0.0 && d.beta < 1.0) {
            return Err(bad(
                "stack.dpclo.beta",
                format!("must be between 0 and 1, found {}", d.beta),
            ));
        }
        if d.l_lowmark > d.l_highmark {
            return Err(bad(
                "stack.dpclo.l_lowmark",
                format!(
                    "must not exceed l_highmark ({}), found {}",
                    d.l_highmark, d.l_lowmark
                ),
            ));
        }
        at_least_1us("stack.dpclo.update_interval_s", d.update_interval_s)?;
        positive("stack.dpclo.delta_pps", d.delta_pps)?;
        positive("stack.dpclo.initial_rate_pps", d.initial_rate_pps)?;
        if d.k_max == Some(0) {
            return Err(bad("stack.dpclo.k_max", "must be at least 1, found 0"));
        }
        Ok(())
    }
}

impl DcloOptions {
    /// Checks DCLO's parameters (with the `dclo` preset): its MAC and the timing of an interval.
    fn validate(&self) -> Result<(), XlError> {
        let d = self;
        if !DCLO_MACS.contains(&d.mac.as_str()) {
            return Err(bad(
                "stack.dclo.mac",
                format!(
                    "unknown MAC \"{}\"; allowed: {}",
                    d.mac,
                    DCLO_MACS.map(|m| format!("\"{m}\"")).join(", ")
                ),
            ));
        }
        at_least_1us("stack.dclo.interval_s", d.interval_s)?;
        at_least_1us("stack.dclo.request_timeout_s", d.request_timeout_s)?;
        positive("stack.dclo.utility_weight", d.utility_weight)?;
        positive("stack.dclo.min_rate_pps", d.min_rate_pps)?;
        // The floor wins over the data rate's ceiling (eq. 2's clamp): bound it as a
        // flow's rate is bounded.
        if d.min_rate_pps > MAX_PACKETS_PER_S {
            return Err(bad(
                "stack.dclo.min_rate_pps",
                format!(
                    "at most one packet per microsecond ({MAX_PACKETS_PER_S:e}), found {:e}",
                    d.min_rate_pps
                ),
            ));
        }
        if !(d.price_jitter_s >= 0.0 && d.price_jitter_s < d.match_delay_s) {
            return Err(bad(
                "stack.dclo.price_jitter_s",
                format!(
                    "must be at least 0 and below match_delay_s ({}), so that \
                             neighbours' PRICEs can arrive before matching starts; found {}",
                    d.match_delay_s, d.price_jitter_s
                ),
            ));
        }
        // A node starts matching up to match_delay_s + price_jitter_s after the
        // interval starts: that must stay inside the interval.
        if !(d.match_delay_s > 0.0 && d.match_delay_s + d.price_jitter_s < d.interval_s) {
            return Err(bad(
                "stack.dclo.match_delay_s",
                format!(
                    "must be above 0 and, plus price_jitter_s ({}), below interval_s \
                             ({}), found {}",
                    d.price_jitter_s, d.interval_s, d.match_delay_s
                ),
            ));
        }
        if d.max_requests == 0 {
            return Err(bad("stack.dclo.max_requests", "must be at least 1"));
        }
        Ok(())
    }
}

impl DiffqOptions {
    /// Checks DiffQ's parameters (with the `diffq-*` presets). Whether multi-path DiffQ can
    /// run under `net.routing` is checked by `Scenario::apply_preset`, which knows the routing.
    fn validate(&self) -> Result<(), XlError> {
        let d = self;
        const MODES: [&str; 3] = ["full", "rate_scheduling", "rate_only"];
        if !MODES.contains(&d.mode.as_str()) {
            return Err(bad(
                "stack.diffq.mode",
                format!(
                    "unknown mode \"{}\"; allowed: \"full\", \"rate_scheduling\", \"rate_only\"",
                    d.mode
                ),
            ));
        }
        if !["aimd", "log_utility"].contains(&d.rate_control.as_str()) {
            return Err(bad(
                "stack.diffq.rate_control",
                format!(
                    "unknown rate control \"{}\"; allowed: \"aimd\", \"log_utility\"",
                    d.rate_control
                ),
            ));
        }
        positive("stack.diffq.alpha_mbps", d.alpha_mbps)?;
        if !(d.beta > 0.0 && d.beta < 1.0) {
            return Err(bad(
                "stack.diffq.beta",
                format!("must be between 0 and 1, found {}", d.beta),
            ));
        }
        if d.queue_thresh == 0 {
            return Err(bad("stack.diffq.queue_thresh", "must be at least 1 packet"));
        }
        if let Some(r) = d.initial_rate_bps {
            positive("stack.diffq.initial_rate_bps", r)?;
        }
        positive("stack.diffq.neighbour_expiry_s", d.neighbour_expiry_s)?;
        if d.next_hops == 0 || d.next_hops > 16 {
            return Err(bad(
                "stack.diffq.next_hops",
                format!("must be 1..=16, found {}", d.next_hops),
            ));
        }
        if d.next_hops > 1 && d.mode == "rate_only" {
            return Err(bad(
                "stack.diffq.next_hops",
                "multi-path DiffQ needs differential scheduling; mode \"rate_only\" \
                         serves destinations in round robin over the routing next hop",
            ));
        }
        Ok(())
    }
}

impl Scenario {
    /// Applies `stack.preset`: every preset but `udp-dcf` sets every flow's transport (and
    /// congestion control and SACK), so one scenario runs under several stacks unchanged.
    pub(super) fn apply_preset(&mut self) -> Result<(), XlError> {
        // (transport, cc, sack) of each preset.
        // `[stack.diffq]`, `[stack.dpclo]`, `[stack.fusion]` and `[stack.dclo]` may stay in a
        // scenario run under other presets (so one file serves `xlayer compare`); only their own
        // presets read them.
        let preset = self.stack.preset.clone();
        let t: (&str, Option<&str>, bool) = match preset.as_str() {
            "udp-dcf" => return Ok(()),
            "udp" => ("udp", None, false),
            "tcp-reno" => ("tcp", Some("reno"), false),
            "tcp-newreno" => ("tcp", Some("newreno"), false),
            // DiffQ's baseline is Linux TCP-SACK: NewReno window growth with SACK recovery.
            "tcp-sack" => ("tcp", Some("newreno"), true),
            "tcp-westwood" => ("tcp", Some("westwood"), false),
            "tcp-few" => ("tcp", Some("few"), false),
            "tfrc" => ("tfrc", None, false),
            "tfrc-ecn" => ("tfrc-ecn", None, false),
            // CLAP (the CLAP slides): every flow a CLAP file transfer over the scenario's MAC.
            "clap" => ("clap", None, false),
            // DiffQ: per-destination queues, 8-level MAC, source rate control; DiffQ-TCP keeps
            // TCP's reliability (with SACK, as the testbed's Linux TCP) without its congestion
            // control.
            // DPCLO: per-destination queues of Table I's 3 packets, DSDV with the ETX metric and
            // several next hops per destination, price-based scheduling with hop-by-hop flow
            // control, source rate adaptation (UDP: the document leaves reliability to a
            // separate mechanism), over ZMAC+ or 802.11e.
            "dpclo-zmacplus" | "dpclo-80211e" => {
                let d = self.stack.dpclo.get_or_insert_with(DpcloOptions::default);
                d.validate()?;
                self.mac.access = if preset == "dpclo-zmacplus" {
                    "zmacplus".into()
                } else {
                    "802.11e".into()
                };
                let etx = d.etx;
                self.net.routing = "dsdv".into();
                let dsdv = self.net.dsdv.get_or_insert_with(DsdvConfig::default);
                dsdv.k_next_hops = dsdv.k_next_hops.max(DPCLO_DSDV_NEXT_HOPS);
                if !etx {
                    dsdv.metric = "hop_count".into();
                }
                self.net.queueing = Some("per_destination".into());
                self.net.dest_queue_packets.get_or_insert(3);
                ("udp", None, false)
            }
            // DCLO: per-destination queues of Table I's 3 packets, no routing (the matched
            // neighbour is the next hop), prices, matching and source rates of `xl::dclo`,
            // UDP sources, over the MAC `stack.dclo.mac` names.
            "dclo" => {
                let d = self.stack.dclo.get_or_insert_with(DcloOptions::default);
                d.validate()?;
                self.mac.access = d.mac.clone();
                // No routing protocol runs: static routes only check that flows are connected
                // and give the hop counts of the results.
                self.net.routing = "static".into();
                self.net.dsdv = None;
                self.net.olsr = None;
                self.net.etx = None;
                self.net.queueing = Some("per_destination".into());
                self.net.dest_queue_packets.get_or_insert(3);
                ("udp", None, false)
            }
            "diffq-udp" | "diffq-tcp" => {
                let d = self.stack.diffq.get_or_insert_with(DiffqOptions::default);
                d.validate()?;
                if d.next_hops > 1 {
                    if self.net.routing == "olsr" {
                        return Err(bad(
                            "stack.diffq.next_hops",
                            "multi-path DiffQ takes its candidate forwarders from DSDV's K next \
                             hops; net.routing = \"olsr\" keeps one",
                        ));
                    }
                    let k = d.next_hops;
                    self.net.routing = "dsdv".into();
                    let dsdv = self.net.dsdv.get_or_insert_with(DsdvConfig::default);
                    dsdv.k_next_hops = dsdv.k_next_hops.max(k);
                }
                self.mac.access = "diffq8".into();
                self.net.queueing = Some("per_destination".into());
                self.net
                    .dest_queue_packets
                    .get_or_insert(DIFFQ_QUEUE_PACKETS);
                if self.stack.preset == "diffq-udp" {
                    ("udp", None, false)
                } else {
                    ("tcp", Some("paced"), true)
                }
            }
            // MORE: every flow's data in batches of coded packets broadcast along the nodes closer
            // to its destination (`xl::more`), over per-destination queues (a forwarder's credit
            // becomes packets there; the node hands the MAC one at a time) and ETX probes (the
            // link measurements MORE chooses forwarders and credits by). Plain MORE's sources
            // send as fast as the MAC takes their packets; DiffQ-MORE adds DiffQ's 8-level MAC,
            // differential scheduling by eq. 2 over each packet's forwarders, and its AIMD
            // source rate (DiffQ §4.2, §6.1).
            "more" | "diffq-more" => {
                let m = self.stack.more.get_or_insert_with(MoreOptions::default);
                m.validate()?;
                if preset == "diffq-more" {
                    let d = self.stack.diffq.get_or_insert_with(DiffqOptions::default);
                    d.validate()?;
                    if d.next_hops > 1 {
                        return Err(bad(
                            "stack.diffq.next_hops",
                            "DiffQ-MORE takes each packet's candidate forwarders from MORE's \
                             forwarder list; leave next_hops at 1",
                        ));
                    }
                    self.mac.access = "diffq8".into();
                }
                for (i, payload) in self
                    .flows
                    .iter()
                    .map(|f| f.payload_bytes)
                    .chain(self.flows_random.iter().map(|f| f.payload_bytes))
                    .enumerate()
                {
                    if payload > MORE_MAX_PAYLOAD {
                        let field = if i < self.flows.len() {
                            format!("flows[{i}].payload_bytes")
                        } else {
                            "flows_random.payload_bytes".to_string()
                        };
                        return Err(bad(
                            field,
                            format!(
                                "at most {MORE_MAX_PAYLOAD} bytes under MORE (the 802.11 MSDU \
                                 less LLC, IP, UDP, the queue header and the longest MORE \
                                 header), found {payload}"
                            ),
                        ));
                    }
                }
                self.net.queueing = Some("per_destination".into());
                self.net
                    .dest_queue_packets
                    .get_or_insert(DIFFQ_QUEUE_PACKETS);
                self.net.etx.get_or_insert_with(EtxConfig::default);
                ("udp", None, false)
            }
            // Fusion: UDP sources (saturating unless they give a rate) over DCF with Fusion's
            // interface queue, congestion bit, rate limiting and prioritized MAC.
            "fusion" => {
                let f = self.stack.fusion.get_or_insert_with(FusionOptions::default);
                f.validate()?;
                ("udp", None, false)
            }
            other => {
                return Err(bad(
                    "stack.preset",
                    format!(
                        "unknown preset \"{other}\"; allowed: {}",
                        PRESETS.map(|p| format!("\"{p}\"")).join(", ")
                    ),
                ))
            }
        };
        // Like `[stack.*]`, a `[mac.zmac]` table may stay in a scenario run under a preset whose
        // MAC is not Z-MAC (so one file serves `xlayer compare` across MACs); only Z-MAC reads
        // it. Under `udp-dcf` (the scenario as written) it stays an error.
        if !matches!(self.mac.access.as_str(), "zmac" | "zmacplus") {
            self.mac.zmac = None;
        }
        let apply = |transport: &mut String,
                     cc: &mut Option<String>,
                     sack: &mut bool,
                     size: &mut Option<u64>,
                     tcp: &mut Option<TcpOptions>,
                     clap: &mut Option<ClapOptions>,
                     rate: &mut RateSpec| {
            *transport = t.0.to_string();
            *cc = t.1.map(str::to_string);
            *sack = t.2;
            // `[flows.tcp]` and `[flows.clap]` may stay in a scenario run under other presets;
            // only their own transport reads them.
            if t.0 != "tcp" {
                *tcp = None;
            }
            if t.0 != "clap" {
                *clap = None;
            }
            if t.1 == Some("paced") {
                // DiffQ sets the rate; the field only keeps validation happy.
                *rate = RateSpec::Bps(1e6);
            } else if t.0 == "tcp" || t.0 == "clap" {
                // TCP and CLAP flows are file transfers paced by their own control.
                *rate = RateSpec::Saturate;
            } else {
                *size = None;
            }
        };
        for f in &mut self.flows {
            apply(
                &mut f.transport,
                &mut f.cc,
                &mut f.sack,
                &mut f.size_bytes,
                &mut f.tcp,
                &mut f.clap,
                &mut f.rate_bps,
            );
            // Request-driven applications run over TCP only.
            if f.transport != "tcp" {
                f.app = None;
            }
        }
        if let Some(f) = &mut self.flows_random {
            apply(
                &mut f.transport,
                &mut f.cc,
                &mut f.sack,
                &mut f.size_bytes,
                &mut f.tcp,
                &mut f.clap,
                &mut f.rate_bps,
            );
        }
        if preset == "more" {
            // MORE's sources broadcast as fast as the MAC takes their packets (DiffQ §6.2).
            for f in &mut self.flows {
                f.rate_bps = RateSpec::Saturate;
            }
            if let Some(f) = &mut self.flows_random {
                f.rate_bps = RateSpec::Saturate;
            }
        }
        Ok(())
    }
}
