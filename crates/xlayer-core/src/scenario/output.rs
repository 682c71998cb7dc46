//! The `[output]` section: what a run records beyond the summary tables (pcap frames, the
//! throughput time series, the TCP trace: [`Output`]), and its validation: the time series' bin
//! width, checked against `duration_s`, and the captured nodes, checked against the node count,
//! both passed in. [`Scenario::capture_config`] gives the radio side of the captures.

use serde::{Deserialize, Serialize};

use super::check::{bad, node_exists};
use super::Scenario;
use crate::error::XlError;
use crate::metrics::pcap::{CaptureConfig, MAX_SNAPLEN};
use crate::phy::radio::{Preamble, Standard};
use crate::wire::radiotap::{Channel, CHANNEL_CCK, CHANNEL_OFDM, RX_HEADER_BYTES};

/// The default snap length: whole frames (tcpdump's and Wireshark's default before 2015, and
/// more than any 802.11 frame the simulator makes).
pub const DEFAULT_SNAPLEN: u32 = 65535;
/// The smallest snap length: the longest radiotap header xlayer writes, so that every record
/// keeps its radiotap header whole.
pub const MIN_SNAPLEN: u32 = RX_HEADER_BYTES as u32;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// Record every frame each node sends or receives, for a pcap file per node.
    #[serde(default)]
    pub pcap: bool,
    /// The nodes whose frames are captured (absent: every node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcap_nodes: Option<Vec<u32>>,
    /// Bytes kept of each captured frame, radiotap header included.
    #[serde(
        default = "Output::default_snaplen",
        skip_serializing_if = "Output::is_default_snaplen"
    )]
    pub pcap_snaplen: u32,
    /// Bin width (s) of the per-flow throughput time series; absent: no time series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeseries_bin_s: Option<f64>,
    /// Record every TCP connection's cwnd, ssthresh, RTT estimate, RTO, retransmissions and
    /// timeouts at each window change and loss (the `tcp_trace` table).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tcp_trace: bool,
}

impl Default for Output {
    fn default() -> Self {
        Output {
            pcap: false,
            pcap_nodes: None,
            pcap_snaplen: DEFAULT_SNAPLEN,
            timeseries_bin_s: None,
            tcp_trace: false,
        }
    }
}

impl Output {
    fn default_snaplen() -> u32 {
        DEFAULT_SNAPLEN
    }

    fn is_default_snaplen(v: &u32) -> bool {
        *v == DEFAULT_SNAPLEN
    }

    /// Checks the time series' bin width (at least 1 ms, at most `duration_s`), the captured
    /// nodes (existing among `nodes`, each once, at least one) and the snap length.
    pub(super) fn validate(&self, duration_s: f64, nodes: u32) -> Result<(), XlError> {
        if let Some(bin) = self.timeseries_bin_s {
            if !(bin.is_finite() && bin >= 1e-3 && bin <= duration_s) {
                return Err(bad(
                    "output.timeseries_bin_s",
                    format!(
                        "must be between 0.001 s and duration_s ({}), found {bin}",
                        duration_s
                    ),
                ));
            }
        }
        if let Some(list) = &self.pcap_nodes {
            if list.is_empty() {
                return Err(bad(
                    "output.pcap_nodes",
                    "empty: list the nodes to capture, or leave it out to capture every node \
                     (output.pcap = false captures none)",
                ));
            }
            for (i, &node) in list.iter().enumerate() {
                let field = format!("output.pcap_nodes[{i}]");
                node_exists(&field, node, nodes)?;
                if list[..i].contains(&node) {
                    return Err(bad(field, format!("node {node} is listed twice")));
                }
            }
        }
        if !(MIN_SNAPLEN..=MAX_SNAPLEN).contains(&self.pcap_snaplen) {
            return Err(bad(
                "output.pcap_snaplen",
                format!(
                    "must be between {MIN_SNAPLEN} (the radiotap header) and {MAX_SNAPLEN} \
                     bytes, found {}",
                    self.pcap_snaplen
                ),
            ));
        }
        Ok(())
    }

    /// The nodes captured, ascending: none without `pcap`, else `pcap_nodes` or all `nodes`.
    pub fn captured_nodes(&self, nodes: u32) -> Vec<u32> {
        if !self.pcap {
            return Vec::new();
        }
        match &self.pcap_nodes {
            Some(list) => {
                let mut v = list.clone();
                v.sort_unstable();
                v
            }
            None => (0..nodes).collect(),
        }
    }
}

impl Scenario {
    /// The radio side of this scenario's captures: the channel (the radio's frequency, CCK
    /// flags for the DSSS radios — 802.11b and ns-2's 802.11 DSSS radio, which radiotap's
    /// flags name together — OFDM for 802.11a), the preamble, the transmit power, the snap
    /// length, and QoS Data frames when the MAC has more than one EDCA level.
    pub fn capture_config(&self) -> CaptureConfig {
        let r = &self.radio;
        let phy = match r.standard {
            Standard::Dot11b | Standard::Ns2 => CHANNEL_CCK,
            Standard::Dot11a => CHANNEL_OFDM,
        };
        CaptureConfig {
            snaplen: self.output.pcap_snaplen,
            channel: Channel::new(r.frequency_mhz.unwrap_or(2412.0), phy),
            short_preamble: r.preamble == Preamble::Short,
            tx_power_dbm: r.tx_power_dbm.unwrap_or(0.0),
            qos: self.mac_levels().len() > 1,
        }
    }
}
