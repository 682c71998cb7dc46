//! Receiver window control (RWC), ECLAIR's worked example, as a built-in optimizer
//! (`[[optimizers]] rust = "rwc"`).
//!
//! At a receiving node, the available window `A = B·R` (bandwidth × round-trip time, in
//! packets) is split over the node's downloads (the TCP flows whose destination it is, in flow
//! order) by the user's priorities x_i (`user.priority.<flow>`, the user tuning layer):
//! `awnd_i = round(x_i / Σx · A)` for all but the last, which takes the remainder
//! `A − Σ awnd_i` (ECLAIR, "ReceiverWindowControl()"; A = 30, x = 2,1,1 → 15, 8, 7). Each
//! window is set as the connection's advertised window (`tcp.rwnd.<flow>`, bytes = packets ×
//! segment size) through the transport tuning layer, at start and on every `user.priority`
//! event. RWC reacts to the user, never to packets: it is off the data path.
//!
//! Arguments: `window_packets` (A), or `bandwidth_bps` and `rtt_s` (A = B·R / (8·segment));
//! `segment_bytes` (default: each flow's payload size).

use super::optimizer::{Ctx, Optimizer};
use super::{TuneEvent, TuneEventKind};
use crate::app::FlowTransport;

/// ECLAIR's split of `a` packets by priorities `x`: rounded shares, the last one the remainder.
pub fn split_window(a: i64, x: &[f64]) -> Vec<i64> {
    let n = x.len();
    if n == 0 {
        return Vec::new();
    }
    let sum: f64 = x.iter().sum();
    let mut out = Vec::with_capacity(n);
    let mut cum = 0;
    for &xi in &x[..n - 1] {
        let w = (xi / sum * a as f64).round() as i64;
        cum += w;
        out.push(w);
    }
    out.push(a - cum);
    out
}

pub struct Rwc {
    window_packets: Option<f64>,
    bandwidth_bps: Option<f64>,
    rtt_s: Option<f64>,
    segment_bytes: Option<u32>,
    /// The last windows set: (flow, packets).
    pub windows: Vec<(u32, i64)>,
}

impl Rwc {
    pub fn from_args(args: &serde_json::Map<String, serde_json::Value>) -> Result<Rwc, String> {
        let allowed = ["window_packets", "bandwidth_bps", "rtt_s", "segment_bytes"];
        for k in args.keys() {
            if !allowed.contains(&k.as_str()) {
                return Err(format!("args.{k}: unknown argument; allowed: {allowed:?}"));
            }
        }
        let num = |k: &str| -> Result<Option<f64>, String> {
            match args.get(k) {
                None => Ok(None),
                Some(v) => match v.as_f64() {
                    Some(f) if f.is_finite() && f > 0.0 => Ok(Some(f)),
                    _ => Err(format!("args.{k}: must be a positive number, found {v}")),
                },
            }
        };
        let r = Rwc {
            window_packets: num("window_packets")?,
            bandwidth_bps: num("bandwidth_bps")?,
            rtt_s: num("rtt_s")?,
            segment_bytes: num("segment_bytes")?.map(|s| s as u32),
            windows: Vec::new(),
        };
        match (r.window_packets, r.bandwidth_bps, r.rtt_s) {
            (Some(_), None, None) | (None, Some(_), Some(_)) => Ok(r),
            _ => Err(
                "args.window_packets: give either window_packets (A) or bandwidth_bps and rtt_s"
                    .into(),
            ),
        }
    }

    fn control(&mut self, ctx: &mut Ctx<'_>) -> Result<(), String> {
        let node = ctx.node();
        let flows: Vec<(u32, u32)> = ctx
            .flows()
            .iter()
            .filter(|f| f.dst == node && matches!(f.transport, FlowTransport::Tcp(_)))
            .map(|f| (f.id, f.payload_bytes))
            .collect();
        if flows.is_empty() {
            return Ok(());
        }
        let seg = self.segment_bytes.unwrap_or(flows[0].1).max(1);
        let a = match self.window_packets {
            Some(a) => a,
            None => {
                self.bandwidth_bps.unwrap_or(0.0) * self.rtt_s.unwrap_or(0.0) / (8.0 * seg as f64)
            }
        }
        .round() as i64;
        let x: Vec<f64> = flows
            .iter()
            .map(|&(f, _)| ctx.get(&format!("user.priority.{f}")))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        let w = split_window(a, &x);
        self.windows.clear();
        for (&(f, payload), &packets) in flows.iter().zip(&w) {
            let bytes = packets.max(1) as f64 * self.segment_bytes.unwrap_or(payload) as f64;
            ctx.set(&format!("tcp.rwnd.{f}"), bytes)
                .map_err(|e| e.to_string())?;
            self.windows.push((f, packets));
        }
        Ok(())
    }
}

impl Optimizer for Rwc {
    fn start(&mut self, ctx: &mut Ctx<'_>) -> Result<(), String> {
        ctx.subscribe(TuneEventKind::UserPriority);
        self.control(ctx)
    }

    fn on_events(&mut self, ctx: &mut Ctx<'_>, events: &[TuneEvent]) -> Result<(), String> {
        if events.iter().any(|e| e.kind == TuneEventKind::UserPriority) {
            self.control(ctx)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eclair_example_split() {
        assert_eq!(split_window(30, &[1.0, 1.0, 1.0]), vec![10, 10, 10]);
        assert_eq!(split_window(30, &[2.0, 1.0, 1.0]), vec![15, 8, 7]);
    }
}
