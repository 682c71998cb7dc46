//! The traffic sections: `[[flows]]` and `[flows_random]` ([`FlowSpec`], [`FlowsRandom`], their
//! offered load [`RateSpec`] and TCP settings [`TcpOptions`]), and their validation: the
//! transport and its options (`check_transport`, which fills in the TCP default `cc`), payload,
//! rate, times and MAC priority (`check_flow`), and the nodes. The values they need from other
//! sections are passed in: the topology's node count, the number of MAC priority levels and
//! `duration_s`.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::check::{bad, default_from_serde, positive};
use crate::error::XlError;
use crate::phy::fec::CodeRate;

default_from_serde!(ClapOptions, TcpOptions);

/// A flow's offered load: a constant bit rate, or a backlogged ("saturate") source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RateSpec {
    Saturate,
    Bps(f64),
}

impl Serialize for RateSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RateSpec::Saturate => s.serialize_str("saturate"),
            RateSpec::Bps(v) => s.serialize_f64(*v),
        }
    }
}

impl<'de> Deserialize<'de> for RateSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RateSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a rate in bit/s (a positive number) or \"saturate\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RateSpec, E> {
                if v == "saturate" {
                    Ok(RateSpec::Saturate)
                } else {
                    Err(E::custom(format!(
                        "expected a rate in bit/s or \"saturate\", found \"{v}\""
                    )))
                }
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RateSpec, E> {
                if v.is_finite() && v > 0.0 {
                    Ok(RateSpec::Bps(v))
                } else {
                    Err(E::custom(format!(
                        "a rate must be a positive number of bit/s, found {v}"
                    )))
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RateSpec, E> {
                self.visit_f64(v as f64)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RateSpec, E> {
                self.visit_f64(v as f64)
            }
        }
        d.deserialize_any(V)
    }
}

/// A flow's FEC code rate (`flows[].code_rate`): "1/3", "1/2", "2/3" or "1" (uncoded), or the
/// same as a number (0.5); kept as the canonical string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeRateSpec(pub CodeRate);

impl Serialize for CodeRateSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(match self.0 {
            CodeRate::OneThird => "1/3",
            CodeRate::OneHalf => "1/2",
            CodeRate::TwoThirds => "2/3",
            CodeRate::ThreeQuarters => "3/4",
            CodeRate::Uncoded => "1",
        })
    }
}

impl<'de> Deserialize<'de> for CodeRateSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        const ALLOWED: &str = "\"1/3\", \"1/2\", \"2/3\" or \"1\" (uncoded)";
        impl<'de> Visitor<'de> for V {
            type Value = CodeRateSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "a code rate: {ALLOWED}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<CodeRateSpec, E> {
                CodeRate::per_flow_from_name(v.trim())
                    .map(CodeRateSpec)
                    .ok_or_else(|| {
                        E::custom(format!("expected a code rate {ALLOWED}, found \"{v}\""))
                    })
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<CodeRateSpec, E> {
                CodeRate::per_flow_from_value(v)
                    .map(CodeRateSpec)
                    .ok_or_else(|| E::custom(format!("expected a code rate {ALLOWED}, found {v}")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<CodeRateSpec, E> {
                self.visit_f64(v as f64)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<CodeRateSpec, E> {
                self.visit_f64(v as f64)
            }
        }
        d.deserialize_any(V)
    }
}

fn default_transport() -> String {
    "udp".into()
}
fn default_rate() -> RateSpec {
    RateSpec::Saturate
}
fn default_payload() -> u32 {
    1000
}

/// TCP settings of a flow beyond `cc` and `sack` (`flows[].tcp`). Defaults are the standards'
/// values; see `crate::transport::tcp` for the sources.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TcpOptions {
    /// Delayed ACKs (RFC 1122/5681): every second segment or after `delack_timeout_s`.
    #[serde(default = "TcpOptions::yes")]
    pub delayed_ack: bool,
    #[serde(default = "TcpOptions::default_delack")]
    pub delack_timeout_s: f64,
    /// Receive buffer: the largest window the receiver advertises.
    #[serde(default = "TcpOptions::default_rcv_buf")]
    pub rcv_buf_bytes: u32,
    /// RFC 7323 window scaling; without it the window is at most 65535 bytes.
    #[serde(default)]
    pub window_scale: bool,
    /// RFC 6298 minimum RTO.
    #[serde(default = "TcpOptions::default_min_rto")]
    pub min_rto_s: f64,
    /// Initial window (segments); default RFC 5681's rule for the MSS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_cwnd: Option<u32>,
    /// TCP-FeW's fractional increment per round trip (DPCLO: 0.01).
    #[serde(default = "TcpOptions::default_few_alpha")]
    pub few_alpha: f64,
    /// Check every delivered byte against what the sender wrote (costs a pass over the bytes).
    #[serde(default)]
    pub verify_stream: bool,
}

impl TcpOptions {
    fn yes() -> bool {
        true
    }
    fn default_delack() -> f64 {
        0.2
    }
    fn default_rcv_buf() -> u32 {
        65535
    }
    fn default_min_rto() -> f64 {
        1.0
    }
    fn default_few_alpha() -> f64 {
        0.01
    }
}

/// CLAP settings of a flow (`flows[].clap`; `transport::clap`). The CLAP slides give none of
/// these values; each default is xlayer's choice, with its reason.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClapOptions {
    /// Seconds between a probe's reply and the next probe (the slides' `f`). Default 0.1 s: ten
    /// path readings a second, as often as the 1 s noise pulses of the slides need to be seen.
    #[serde(default = "ClapOptions::default_probe_interval")]
    pub probe_interval_s: f64,
    /// IP bytes of a probe and of its reply (the slides' `p`). Default 44: IPv4 (20) + UDP (8)
    /// + the CLAP header (16), no padding.
    #[serde(default = "ClapOptions::default_probe_bytes")]
    pub probe_bytes: u32,
    /// Seconds between the receiver's aggregate NACKs. Default 0.05 s: at 5 Mbit/s a NACK
    /// covers about 20 packets of 1460 bytes, so it is one reverse frame per 20 data frames
    /// (TCP's delayed ACKs send one per 2).
    #[serde(default = "ClapOptions::default_nack_interval")]
    pub nack_interval_s: f64,
    /// Packets the sender may send beyond the receiver's first missing one (the receiver's
    /// buffer; a NACK's bitmap is at most this long). Default 8192.
    #[serde(default = "ClapOptions::default_max_outstanding")]
    pub max_outstanding: u32,
}

impl ClapOptions {
    fn default_probe_interval() -> f64 {
        0.1
    }
    fn default_probe_bytes() -> u32 {
        CLAP_MIN_PROBE_BYTES
    }
    fn default_nack_interval() -> f64 {
        0.05
    }
    fn default_max_outstanding() -> u32 {
        8192
    }

    fn validate(&self, p: &str) -> Result<(), XlError> {
        positive(&format!("{p}.clap.probe_interval_s"), self.probe_interval_s)?;
        positive(&format!("{p}.clap.nack_interval_s"), self.nack_interval_s)?;
        for (name, v) in [
            ("probe_interval_s", self.probe_interval_s),
            ("nack_interval_s", self.nack_interval_s),
        ] {
            if v > 3600.0 {
                return Err(bad(
                    format!("{p}.clap.{name}"),
                    format!("must be at most 3600 s, found {v}"),
                ));
            }
        }
        if !(CLAP_MIN_PROBE_BYTES..=2296).contains(&self.probe_bytes) {
            return Err(bad(
                format!("{p}.clap.probe_bytes"),
                format!(
                    "must be {CLAP_MIN_PROBE_BYTES}..=2296 (IPv4, UDP and the 16-byte CLAP header at least; the 802.11 MSDU limit less LLC at most), found {}",
                    self.probe_bytes
                ),
            ));
        }
        if !(1..=1 << 20).contains(&self.max_outstanding) {
            return Err(bad(
                format!("{p}.clap.max_outstanding"),
                format!(
                    "must be 1..=1048576 packets, found {}",
                    self.max_outstanding
                ),
            ));
        }
        Ok(())
    }
}

/// The smallest CLAP probe: IPv4, UDP and the CLAP header.
pub const CLAP_MIN_PROBE_BYTES: u32 = 44;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub src: u32,
    pub dst: u32,
    #[serde(default = "default_transport")]
    pub transport: String,
    /// TCP congestion control: "reno", "newreno" (default), "westwood", "few", "paced".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc: Option<String>,
    /// TCP SACK option (RFC 2018) and RFC 6675 loss recovery.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sack: bool,
    /// Bytes of a bulk transfer (TCP, CLAP); absent: long-lived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpOptions>,
    /// CLAP settings (`transport = "clap"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clap: Option<ClapOptions>,
    #[serde(default = "default_rate")]
    pub rate_bps: RateSpec,
    #[serde(default = "default_payload")]
    pub payload_bytes: u32,
    #[serde(default)]
    pub start_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_s: Option<f64>,
    /// MAC priority level (EDCA queue index, 0 = lowest).
    #[serde(default)]
    pub priority: u32,
    /// The flow's own link-layer retry limit at every node that sends its packets (its frames
    /// are tried at most this many times; absent: the MAC's limits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_limit: Option<u32>,
    /// The flow's own FEC code rate at every node that sends its data frames (802.11a BPSK OFDM
    /// at 12 · R Mbit/s; absent: the MAC's data rate and its code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_rate: Option<CodeRateSpec>,
    /// A request-driven application over the flow's TCP connection (`[flows.app]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<AppSpec>,
}

/// `[flows.app]`: web browsing or e-mail over the flow's persistent TCP connection (the
/// flavor-aware link layer's Table I; `app::traffic`). Unset fields take the document's values.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppSpec {
    /// "http" or "email".
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_interval_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub html_bytes: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_min_bytes: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_max_bytes: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email_bytes: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email_interval_s: Option<f64>,
}

impl AppSpec {
    /// The validated model.
    pub fn model(&self) -> crate::app::traffic::AppModel {
        use crate::app::traffic::AppModel;
        match self.kind.as_str() {
            "email" => AppModel::Email {
                bytes: self.email_bytes.unwrap_or(2000),
                interval_s: self.email_interval_s.unwrap_or(360.0),
            },
            _ => AppModel::Http {
                page_interval_s: self.page_interval_s.unwrap_or(60.0),
                html_bytes: self.html_bytes.unwrap_or(1000),
                images: self.images.unwrap_or(5),
                image_min_bytes: self.image_min_bytes.unwrap_or(500),
                image_max_bytes: self.image_max_bytes.unwrap_or(2000),
            },
        }
    }

    fn validate(&self, p: &str) -> Result<(), XlError> {
        let p = format!("{p}.app");
        let http = [
            ("page_interval_s", self.page_interval_s.is_some()),
            ("html_bytes", self.html_bytes.is_some()),
            ("images", self.images.is_some()),
            ("image_min_bytes", self.image_min_bytes.is_some()),
            ("image_max_bytes", self.image_max_bytes.is_some()),
        ];
        let email = [
            ("email_bytes", self.email_bytes.is_some()),
            ("email_interval_s", self.email_interval_s.is_some()),
        ];
        let forbid = |fields: &[(&str, bool)]| -> Result<(), XlError> {
            match fields.iter().find(|f| f.1) {
                Some((name, _)) => Err(bad(
                    format!("{p}.{name}"),
                    format!("not used with kind = \"{}\"", self.kind),
                )),
                None => Ok(()),
            }
        };
        let bytes = |name: &str, v: Option<u32>| -> Result<(), XlError> {
            match v {
                Some(b) if !(1..=100_000_000).contains(&b) => Err(bad(
                    format!("{p}.{name}"),
                    format!("must be 1..=100000000 bytes, found {b}"),
                )),
                _ => Ok(()),
            }
        };
        match self.kind.as_str() {
            "http" => {
                forbid(&email)?;
                if let Some(t) = self.page_interval_s {
                    positive(&format!("{p}.page_interval_s"), t)?;
                }
                bytes("html_bytes", self.html_bytes)?;
                bytes("image_min_bytes", self.image_min_bytes)?;
                bytes("image_max_bytes", self.image_max_bytes)?;
                if let Some(n) = self.images.filter(|&n| n > 1000) {
                    return Err(bad(
                        format!("{p}.images"),
                        format!("must be 0..=1000, found {n}"),
                    ));
                }
                let (lo, hi) = (
                    self.image_min_bytes.unwrap_or(500),
                    self.image_max_bytes.unwrap_or(2000),
                );
                if hi < lo {
                    return Err(bad(
                        format!("{p}.image_max_bytes"),
                        format!("must be at least image_min_bytes ({lo}), found {hi}"),
                    ));
                }
                Ok(())
            }
            "email" => {
                forbid(&http)?;
                bytes("email_bytes", self.email_bytes)?;
                if let Some(t) = self.email_interval_s {
                    positive(&format!("{p}.email_interval_s"), t)?;
                }
                Ok(())
            }
            other => Err(bad(
                format!("{p}.kind"),
                format!("unknown application \"{other}\"; allowed: \"http\", \"email\""),
            )),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowsRandom {
    pub count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(default = "default_transport")]
    pub transport: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sack: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpOptions>,
    /// CLAP settings (`transport = "clap"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clap: Option<ClapOptions>,
    #[serde(default = "default_rate")]
    pub rate_bps: RateSpec,
    #[serde(default = "default_payload")]
    pub payload_bytes: u32,
    #[serde(default)]
    pub start_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_s: Option<f64>,
    #[serde(default)]
    pub priority: u32,
    /// Flows arriving over time (`[flows_random.arrivals]`); absent: all start at `start_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<ArrivalSpec>,
    /// Each flow's own duration (`[flows_random.durations]`); absent: all stop at `stop_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durations: Option<DurationSpec>,
}

/// Checks the transport of a flow and fills the TCP default `cc`.
#[allow(clippy::too_many_arguments)]
fn check_transport(
    p: &str,
    transport: &str,
    cc: &mut Option<String>,
    sack: bool,
    size: Option<u64>,
    tcp: &Option<TcpOptions>,
    clap: &Option<ClapOptions>,
    rate: RateSpec,
) -> Result<(), XlError> {
    const ALLOWED: &str = "\"udp\", \"tcp\", \"tfrc\", \"tfrc-ecn\", \"clap\"";
    if clap.is_some() && transport != "clap" {
        return Err(bad(
            format!("{p}.clap"),
            format!("applies to clap flows only; this flow's transport is \"{transport}\""),
        ));
    }
    match transport {
        "clap" => {
            for (field, given) in [("cc", cc.is_some()), ("sack", sack), ("tcp", tcp.is_some())] {
                if given {
                    return Err(bad(
                        format!("{p}.{field}"),
                        "applies to tcp flows only; this flow's transport is \"clap\"",
                    ));
                }
            }
            if size == Some(0) {
                return Err(bad(format!("{p}.size_bytes"), "must be at least 1 byte"));
            }
            if let Some(c) = clap {
                c.validate(p)?;
            }
        }
        "udp" | "tfrc" | "tfrc-ecn" => {
            for (field, given) in [
                ("cc", cc.is_some()),
                ("sack", sack),
                ("size_bytes", size.is_some()),
                ("tcp", tcp.is_some()),
            ] {
                if given {
                    let to = if field == "size_bytes" {
                        "tcp and clap"
                    } else {
                        "tcp"
                    };
                    return Err(bad(
                        format!("{p}.{field}"),
                        format!(
                            "applies to {to} flows only; this flow's transport is \"{transport}\""
                        ),
                    ));
                }
            }
        }
        "tcp" => {
            let c = cc.get_or_insert_with(|| "newreno".to_string());
            const CCS: [&str; 5] = ["reno", "newreno", "westwood", "few", "paced"];
            if !CCS.contains(&c.as_str()) {
                return Err(bad(
                    format!("{p}.cc"),
                    format!(
                        "unknown congestion control \"{c}\"; allowed: {}",
                        CCS.map(|x| format!("\"{x}\"")).join(", ")
                    ),
                ));
            }
            match (c.as_str(), rate) {
                ("paced", RateSpec::Saturate) => {
                    return Err(bad(
                        format!("{p}.rate_bps"),
                        "a paced TCP flow needs its initial sending rate in bit/s",
                    ))
                }
                ("paced", _) | (_, RateSpec::Saturate) => {}
                (_, RateSpec::Bps(_)) => {
                    return Err(bad(
                        format!("{p}.rate_bps"),
                        "a TCP flow is a bulk transfer paced by its congestion control: leave rate_bps out (or use cc = \"paced\")",
                    ))
                }
            }
            if size == Some(0) {
                return Err(bad(format!("{p}.size_bytes"), "must be at least 1 byte"));
            }
            if let Some(t) = tcp {
                positive(&format!("{p}.tcp.delack_timeout_s"), t.delack_timeout_s)?;
                positive(&format!("{p}.tcp.min_rto_s"), t.min_rto_s)?;
                positive(&format!("{p}.tcp.few_alpha"), t.few_alpha)?;
                if t.delack_timeout_s > 0.5 {
                    return Err(bad(
                        format!("{p}.tcp.delack_timeout_s"),
                        format!(
                            "RFC 1122 allows at most 0.5 s, found {}",
                            t.delack_timeout_s
                        ),
                    ));
                }
                if t.rcv_buf_bytes == 0 || (!t.window_scale && t.rcv_buf_bytes > 65535) {
                    return Err(bad(
                        format!("{p}.tcp.rcv_buf_bytes"),
                        format!(
                            "must be 1..=65535 without window scaling (set tcp.window_scale = true for more), found {}",
                            t.rcv_buf_bytes
                        ),
                    ));
                }
                if t.initial_cwnd == Some(0) {
                    return Err(bad(
                        format!("{p}.tcp.initial_cwnd"),
                        "must be at least 1 segment",
                    ));
                }
            }
        }
        other => {
            return Err(bad(
                format!("{p}.transport"),
                format!("unknown transport \"{other}\"; allowed: {ALLOWED}"),
            ))
        }
    }
    Ok(())
}

/// The fastest a flow's source may send (`flows[i].rate_bps`).
pub(super) const MAX_PACKETS_PER_S: f64 = 1e6;

#[allow(clippy::too_many_arguments)]
fn check_flow(
    p: &str,
    transport: &str,
    rate: RateSpec,
    payload: u32,
    start: f64,
    stop: Option<f64>,
    priority: u32,
    levels: u32,
    duration: f64,
) -> Result<(), XlError> {
    if let RateSpec::Bps(v) = rate {
        positive(&format!("{p}.rate_bps"), v)?;
    }
    // 2304 bytes is the 802.11 MSDU limit; 8 go to LLC/SNAP, 20 to IPv4, 8 to UDP (TFRC adds
    // its 16-byte header), 20 + up to 28 of options to TCP.
    let headers = match transport {
        "tcp" => 8 + 20 + 20 + 28,
        "tfrc" | "tfrc-ecn" => 8 + 20 + 8 + 16,
        "clap" => 8 + 20 + 8 + 16,
        _ => 36,
    };
    if payload == 0 || payload > 2304 - headers {
        return Err(bad(
            format!("{p}.payload_bytes"),
            format!(
                "must be 1..={} (the 802.11 MSDU limit less LLC, IP and {transport} headers), found {payload}",
                2304 - headers
            ),
        ));
    }
    if let RateSpec::Bps(v) = rate {
        // One packet per microsecond at most: faster sources only fill queues, and each packet
        // costs an event, so a run at 1e12 bit/s would never end.
        let max = f64::from(payload) * 8.0 * MAX_PACKETS_PER_S;
        if v > max {
            return Err(bad(
                format!("{p}.rate_bps"),
                format!(
                    "at most one packet per microsecond: {max:e} bit/s with {payload}-byte payloads, found {v:e}"
                ),
            ));
        }
    }
    if !(start.is_finite() && start >= 0.0 && start < duration) {
        return Err(bad(
            format!("{p}.start_s"),
            format!("must be >= 0 and below duration_s ({duration}), found {start}"),
        ));
    }
    if let Some(s) = stop {
        if !(s.is_finite() && s > start) {
            return Err(bad(
                format!("{p}.stop_s"),
                format!("must be after start_s ({start}), found {s}"),
            ));
        }
    }
    if priority >= levels {
        return Err(bad(
            format!("{p}.priority"),
            format!(
                "the MAC has {levels} priority level(s) (0..{}), found {priority}",
                levels - 1
            ),
        ));
    }
    Ok(())
}

/// Checks every `[[flows]]` entry: its transport, load, times and priority (`levels` MAC
/// priority levels, `duration_s`), and its nodes (among the topology's `n`).
pub(super) fn validate_flows(
    flows: &mut [FlowSpec],
    n: u32,
    levels: u32,
    duration_s: f64,
) -> Result<(), XlError> {
    for (i, f) in flows.iter_mut().enumerate() {
        let p = format!("flows[{i}]");
        if let Some(app) = &f.app {
            app.validate(&p)?;
            if f.transport != "tcp" {
                return Err(bad(
                    format!("{p}.app"),
                    format!(
                        "runs over tcp only; this flow's transport is \"{}\"",
                        f.transport
                    ),
                ));
            }
            if f.size_bytes.is_some() {
                return Err(bad(
                    format!("{p}.size_bytes"),
                    "not used with an app: the application decides what the server sends",
                ));
            }
        }
        if let Some(r) = f.retry_limit.filter(|r| !(1..=255).contains(r)) {
            return Err(bad(
                format!("{p}.retry_limit"),
                format!("must be 1..=255 attempts, found {r}"),
            ));
        }
        check_transport(
            &p,
            &f.transport,
            &mut f.cc,
            f.sack,
            f.size_bytes,
            &f.tcp,
            &f.clap,
            f.rate_bps,
        )?;
        check_flow(
            &p,
            &f.transport,
            f.rate_bps,
            f.payload_bytes,
            f.start_s,
            f.stop_s,
            f.priority,
            levels,
            duration_s,
        )?;
        if f.src >= n {
            return Err(bad(
                format!("{p}.src"),
                format!(
                    "node {} does not exist (the topology has nodes 0..{})",
                    f.src,
                    n.saturating_sub(1)
                ),
            ));
        }
        if f.dst >= n {
            return Err(bad(
                format!("{p}.dst"),
                format!(
                    "node {} does not exist (the topology has nodes 0..{})",
                    f.dst,
                    n.saturating_sub(1)
                ),
            ));
        }
        if f.src == f.dst {
            return Err(bad(
                format!("{p}.dst"),
                "source and destination are the same node".to_string(),
            ));
        }
    }
    Ok(())
}

/// `[flows_random.arrivals]`: the law of the time between two flow arrivals.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArrivalSpec {
    /// "poisson" or "weibull".
    pub process: String,
    /// Mean time between arrivals.
    pub mean_s: f64,
    /// Weibull shape (`weibull` only; below 1 burstier than Poisson).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<f64>,
}

/// `[flows_random.durations]`: the law of a flow's duration.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DurationSpec {
    /// "fixed", "exponential", "lognormal" or "pareto".
    pub distribution: String,
    /// Mean duration.
    pub mean_s: f64,
    /// σ of the duration's logarithm (`lognormal` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sigma: Option<f64>,
    /// Pareto shape, above 1 (`pareto` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// Durations are capped here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_s: Option<f64>,
}

impl ArrivalSpec {
    /// The validated law.
    pub fn law(&self) -> crate::app::arrivals::Arrivals {
        use crate::app::arrivals::Arrivals;
        match self.process.as_str() {
            "weibull" => Arrivals::Weibull {
                mean_s: self.mean_s,
                shape: self.shape.unwrap_or(1.0),
            },
            _ => Arrivals::Poisson {
                mean_s: self.mean_s,
            },
        }
    }

    fn validate(&self) -> Result<(), XlError> {
        let p = "flows_random.arrivals";
        positive(&format!("{p}.mean_s"), self.mean_s)?;
        match (self.process.as_str(), self.shape) {
            ("poisson", None) => Ok(()),
            ("poisson", Some(_)) => Err(bad(
                format!("{p}.shape"),
                "used with process = \"weibull\" only",
            )),
            ("weibull", Some(k)) if (0.05..=100.0).contains(&k) => Ok(()),
            ("weibull", Some(k)) => Err(bad(
                format!("{p}.shape"),
                format!("must be within 0.05..=100, found {k}"),
            )),
            ("weibull", None) => Err(bad(
                format!("{p}.shape"),
                "required for process = \"weibull\"",
            )),
            (other, _) => Err(bad(
                format!("{p}.process"),
                format!("unknown process \"{other}\"; allowed: \"poisson\", \"weibull\""),
            )),
        }
    }
}

impl DurationSpec {
    /// The validated law.
    pub fn law(&self) -> crate::app::arrivals::Durations {
        use crate::app::arrivals::Durations;
        match self.distribution.as_str() {
            "exponential" => Durations::Exponential {
                mean_s: self.mean_s,
            },
            "lognormal" => Durations::LogNormal {
                mean_s: self.mean_s,
                sigma: self.sigma.unwrap_or(0.0),
            },
            "pareto" => Durations::Pareto {
                mean_s: self.mean_s,
                alpha: self.alpha.unwrap_or(2.0),
            },
            _ => Durations::Fixed { s: self.mean_s },
        }
    }

    fn validate(&self) -> Result<(), XlError> {
        let p = "flows_random.durations";
        positive(&format!("{p}.mean_s"), self.mean_s)?;
        if let Some(m) = self.max_s {
            positive(&format!("{p}.max_s"), m)?;
        }
        let (sigma, alpha) = (self.sigma.is_some(), self.alpha.is_some());
        let only = |field: &str, given: bool, for_what: &str| -> Result<(), XlError> {
            if given {
                Err(bad(
                    format!("{p}.{field}"),
                    format!("used with distribution = \"{for_what}\" only"),
                ))
            } else {
                Ok(())
            }
        };
        match self.distribution.as_str() {
            "fixed" | "exponential" => {
                only("sigma", sigma, "lognormal")?;
                only("alpha", alpha, "pareto")
            }
            "lognormal" => {
                only("alpha", alpha, "pareto")?;
                match self.sigma {
                    Some(s) if s.is_finite() && (0.0..=10.0).contains(&s) => Ok(()),
                    Some(s) => Err(bad(
                        format!("{p}.sigma"),
                        format!("must be within 0..=10, found {s}"),
                    )),
                    None => Err(bad(
                        format!("{p}.sigma"),
                        "required for distribution = \"lognormal\"",
                    )),
                }
            }
            "pareto" => {
                only("sigma", sigma, "lognormal")?;
                match self.alpha {
                    Some(a) if a.is_finite() && a > 1.0 && a <= 100.0 => Ok(()),
                    Some(a) => Err(bad(
                        format!("{p}.alpha"),
                        format!("must be above 1 (a finite mean) and at most 100, found {a}"),
                    )),
                    None => Err(bad(
                        format!("{p}.alpha"),
                        "required for distribution = \"pareto\"",
                    )),
                }
            }
            other => Err(bad(
                format!("{p}.distribution"),
                format!("unknown distribution \"{other}\"; allowed: \"fixed\", \"exponential\", \"lognormal\", \"pareto\""),
            )),
        }
    }
}

impl FlowsRandom {
    /// Checks the random flows' transport, load, times and priority as `validate_flows` does, and
    /// their count (the topology has `n` nodes).
    pub(super) fn validate(&mut self, n: u32, levels: u32, duration_s: f64) -> Result<(), XlError> {
        let fr = self;
        check_transport(
            "flows_random",
            &fr.transport,
            &mut fr.cc,
            fr.sack,
            fr.size_bytes,
            &fr.tcp,
            &fr.clap,
            fr.rate_bps,
        )?;
        check_flow(
            "flows_random",
            &fr.transport,
            fr.rate_bps,
            fr.payload_bytes,
            fr.start_s,
            fr.stop_s,
            fr.priority,
            levels,
            duration_s,
        )?;
        if fr.count == 0 || fr.count > 100_000 {
            return Err(bad(
                "flows_random.count",
                format!("must be 1..=100000, found {}", fr.count),
            ));
        }
        if n < 2 {
            return Err(bad(
                "flows_random.count",
                "random flows need at least 2 nodes",
            ));
        }
        if let Some(a) = &fr.arrivals {
            a.validate()?;
        }
        if let Some(d) = &fr.durations {
            d.validate()?;
        }
        Ok(())
    }
}
