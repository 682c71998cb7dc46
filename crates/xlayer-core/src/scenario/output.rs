//! The `[output]` section: what a run records beyond the summary tables (pcap frames, the
//! throughput time series, the TCP trace: [`Output`]), and its validation: the time series' bin
//! width, checked against `duration_s`, which is passed in.

use serde::{Deserialize, Serialize};

use super::check::bad;
use crate::error::XlError;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// Record every frame each node sends or receives, for a pcap file per node.
    #[serde(default)]
    pub pcap: bool,
    /// Bin width (s) of the per-flow throughput time series; absent: no time series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeseries_bin_s: Option<f64>,
    /// Record every TCP connection's cwnd, ssthresh, RTT estimate, RTO, retransmissions and
    /// timeouts at each window change and loss (the `tcp_trace` table).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tcp_trace: bool,
}

impl Output {
    /// Checks the time series' bin width: at least 1 ms, at most `duration_s`.
    pub(super) fn validate(&self, duration_s: f64) -> Result<(), XlError> {
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
        Ok(())
    }
}
