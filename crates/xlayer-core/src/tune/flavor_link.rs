//! The flavor-aware link layer (seed document 003 §IV-A) as a built-in ECLAIR optimizer
//! (`[[optimizers]] rust = "flavor_link"`, or `[stack.flavor_link]`): at a node (the access
//! point), each TCP flow's link-layer setting — FEC code rate and ARQ persistence — follows the
//! flavor the node's passive detector infers (`transport::flavor`), through the tuning layers
//! only: it registers for `transport.flavor` and sets `mac.flow_code_rate.<flow>` and
//! `mac.flow_retry_limit.<flow>`.
//!
//! The document's table (code rate, retry limit): Reno (1/3, 4), Reno+SACK (1/2, 4), NewReno
//! (1/3, 2), NewReno+SACK (1/2, 2), Westwood (2/3, 4); 802.11a's default (1/2, 4) before a
//! decision. The document has no Westwood+SACK entry; xlayer gives it Westwood's. Arguments
//! override any entry: `args.<entry> = [code rate, retry limit]` for the entries `default`,
//! `reno`, `reno_sack`, `newreno`, `newreno_sack`, `westwood`, `westwood_sack`.

use super::optimizer::{Ctx, Optimizer};
use super::{TuneEvent, TuneEventKind};
use crate::app::FlowTransport;
use crate::phy::fec::CodeRate;
use crate::transport::flavor::Flavor;

/// The table's entries, in `args` order.
pub const ENTRIES: [&str; 7] = [
    "default",
    "reno",
    "reno_sack",
    "newreno",
    "newreno_sack",
    "westwood",
    "westwood_sack",
];

/// One entry: the code rate and the link-layer attempts.
pub type Setting = (CodeRate, u32);

/// The document's table, in [`ENTRIES`] order.
pub const DOCUMENT_TABLE: [Setting; 7] = [
    (CodeRate::OneHalf, 4),
    (CodeRate::OneThird, 4),
    (CodeRate::OneHalf, 4),
    (CodeRate::OneThird, 2),
    (CodeRate::OneHalf, 2),
    (CodeRate::TwoThirds, 4),
    (CodeRate::TwoThirds, 4),
];

pub struct FlavorLink {
    table: [Setting; 7],
    /// The settings made: (flow, entry index).
    pub applied: Vec<(u32, usize)>,
}

/// The table entry of a flavor.
pub fn entry(flavor: Flavor, sack: bool) -> usize {
    match (flavor, sack) {
        (Flavor::Unknown, _) => 0,
        (Flavor::Reno, false) => 1,
        (Flavor::Reno, true) => 2,
        (Flavor::NewReno, false) => 3,
        (Flavor::NewReno, true) => 4,
        (Flavor::Westwood, false) => 5,
        (Flavor::Westwood, true) => 6,
        // The document's table has no row for Linux's CUBIC and BBR: they keep the setting
        // used before a decision.
        (Flavor::Cubic | Flavor::Bbr, _) => 0,
    }
}

impl FlavorLink {
    pub fn from_args(args: &serde_json::Map<String, serde_json::Value>) -> Result<Self, String> {
        let mut table = DOCUMENT_TABLE;
        for (k, v) in args {
            let Some(i) = ENTRIES.iter().position(|e| e == k) else {
                return Err(format!("args.{k}: unknown entry; allowed: {ENTRIES:?}"));
            };
            let bad = || {
                format!(
                    "args.{k}: must be [code rate, retry limit], a code rate of 1/3, 1/2, 2/3 or 1 (a number or \"1/3\") and 1..=255 attempts, found {v}"
                )
            };
            let pair = v.as_array().filter(|a| a.len() == 2).ok_or_else(bad)?;
            let code = match &pair[0] {
                serde_json::Value::String(s) => CodeRate::per_flow_from_name(s),
                x => x.as_f64().and_then(CodeRate::per_flow_from_value),
            }
            .ok_or_else(bad)?;
            let retries = pair[1]
                .as_u64()
                .filter(|r| (1..=255).contains(r))
                .ok_or_else(bad)?;
            table[i] = (code, retries as u32);
        }
        Ok(FlavorLink {
            table,
            applied: Vec::new(),
        })
    }

    fn apply(&mut self, ctx: &mut Ctx<'_>, flow: u32, entry: usize) -> Result<(), String> {
        let (code, retries) = self.table[entry];
        ctx.set(&format!("mac.flow_code_rate.{flow}"), code.value())
            .map_err(|e| e.to_string())?;
        ctx.set(&format!("mac.flow_retry_limit.{flow}"), retries as f64)
            .map_err(|e| e.to_string())?;
        self.applied.push((flow, entry));
        Ok(())
    }
}

impl Optimizer for FlavorLink {
    fn start(&mut self, ctx: &mut Ctx<'_>) -> Result<(), String> {
        ctx.subscribe(TuneEventKind::TcpFlavor);
        let flows: Vec<u32> = ctx
            .flows()
            .iter()
            .filter(|f| matches!(f.transport, FlowTransport::Tcp(_)))
            .map(|f| f.id)
            .collect();
        for f in flows {
            self.apply(ctx, f, 0)?;
        }
        Ok(())
    }

    fn on_events(&mut self, ctx: &mut Ctx<'_>, events: &[TuneEvent]) -> Result<(), String> {
        for e in events {
            if let (TuneEventKind::TcpFlavor, Some(flow)) = (e.kind, e.flow) {
                let (flavor, sack) = Flavor::from_event_code(e.value);
                self.apply(ctx, flow, entry(flavor, sack))?;
            }
        }
        Ok(())
    }
}
