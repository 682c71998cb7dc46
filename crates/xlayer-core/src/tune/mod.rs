//! Cross-layer tuning (ECLAIR's tuning layers): every layer of every node exposes named
//! parameters that optimizers read and set, and publishes events they can subscribe to.
//!
//! Each layer declares its tunables once, next to its code — name, layer, doc, unit, range — the
//! way ns-3's `GetTypeId` declares attributes (`mac::tuning`, `phy::tuning`, `net::tuning`,
//! `transport::tuning`, and ECLAIR's own user and application layers in [`layers`]);
//! [`all_params`] is the registry, and [`get`] and [`set`] are the only way in, never the
//! layers' fields. Per-level MAC parameters are addressed as `mac.cw_min.<level>`; indexed network
//! parameters take a neighbour or destination id the same way (`net.etx.<neighbour>`,
//! `net.next_hop.<destination>`). Lists that do not fit one number — the K next hops, the
//! neighbours' queue lengths as heard — are read with [`next_hops`], [`etx_links`],
//! [`dest_queue_lengths`] and [`overheard_queues`].
//!
//! Events are buffered in the [`EventBus`] only for kinds someone subscribed to, so an
//! unobserved event costs one branch; they are delivered after the data path has done its work
//! (ECLAIR: optimizers sit off the data path).
//!
//! This module sees no node assembly: it reaches an assembled network through the [`Host`]
//! trait, which `crate::world::World` implements by handing each declared parameter to the
//! layer that owns it.

use crate::error::XlError;
pub use crate::sim::param::{EventSpec, ParamSpec, TuneEventKind};
use crate::sim::SimTime;

pub mod core;
pub mod flavor_link;
pub mod layers;
pub mod optimizer;
pub mod rwc;

#[derive(Debug, Clone, Copy)]
pub struct TuneEvent {
    pub time: SimTime,
    pub node: u32,
    pub kind: TuneEventKind,
    pub value: f64,
    /// The flow (connection) the event concerns, for transport events.
    pub flow: Option<u32>,
}

/// Buffered events for subscribed kinds.
#[derive(Debug, Default)]
pub struct EventBus {
    subscribed: [bool; TuneEventKind::ALL.len()],
    pending: Vec<TuneEvent>,
    /// Kinds the API's `subscribe`/`drain` consumer asked for (kept for it when optimizers
    /// take their events), and how many optimizers registered for each kind.
    external: [bool; TuneEventKind::ALL.len()],
    registered: [u32; TuneEventKind::ALL.len()],
    /// Pending events before this index were already handed to the optimizers.
    handed: usize,
}

impl EventBus {
    #[inline]
    pub fn wants(&self, kind: TuneEventKind) -> bool {
        self.subscribed[kind.index()]
    }

    pub fn subscribe(&mut self, kind: TuneEventKind) {
        self.subscribed[kind.index()] = true;
        self.external[kind.index()] = true;
    }

    pub fn publish(&mut self, time: SimTime, node: u32, kind: TuneEventKind, value: f64) {
        self.pending.push(TuneEvent {
            time,
            node,
            kind,
            value,
            flow: None,
        });
    }

    /// Publishes an event of one flow's connection.
    pub fn publish_flow(
        &mut self,
        time: SimTime,
        node: u32,
        flow: u32,
        kind: TuneEventKind,
        value: f64,
    ) {
        self.pending.push(TuneEvent {
            time,
            node,
            kind,
            value,
            flow: Some(flow),
        });
    }

    /// Takes the events published since the last call, oldest first.
    pub fn drain(&mut self) -> Vec<TuneEvent> {
        self.handed = 0;
        std::mem::take(&mut self.pending)
    }

    /// An optimizer registers for `kind` (the data path starts publishing it).
    pub(crate) fn register(&mut self, kind: TuneEventKind) {
        self.registered[kind.index()] += 1;
        self.subscribed[kind.index()] = true;
    }

    /// An optimizer unregisters from `kind`; the data path stops publishing it when no one
    /// else wants it.
    pub(crate) fn unregister(&mut self, kind: TuneEventKind) {
        let i = kind.index();
        self.registered[i] = self.registered[i].saturating_sub(1);
        self.subscribed[i] = self.external[i] || self.registered[i] > 0;
    }

    /// Events not yet handed to the optimizers.
    pub(crate) fn pending_len(&self) -> usize {
        self.pending.len() - self.handed
    }

    /// Appends the events not yet handed to the optimizers to `out`, leaving the kinds the API
    /// consumer subscribed to for its `drain`.
    pub(crate) fn take_for_optimizers(&mut self, out: &mut Vec<TuneEvent>) {
        out.extend_from_slice(&self.pending[self.handed..]);
        if self.external.iter().any(|&e| e) {
            let external = self.external;
            self.pending.retain(|e| external[e.kind.index()]);
            self.handed = self.pending.len();
        } else {
            self.pending.clear();
            self.handed = 0;
        }
    }
}

/// Every parameter, as the layers declare them: MAC, PHY, network, transport, then ECLAIR's
/// user and application layers ([`layers`]).
pub fn all_params() -> impl Iterator<Item = &'static ParamSpec> {
    crate::mac::tuning::PARAMS
        .iter()
        .chain(crate::phy::tuning::PARAMS)
        .chain(crate::net::tuning::PARAMS)
        .chain(crate::transport::tuning::PARAMS)
        .chain(layers::PARAMS)
}

/// Every event kind, as the layers declare them: MAC, PHY, network, transport, then ECLAIR's
/// user and application layers.
pub fn all_events() -> impl Iterator<Item = &'static EventSpec> {
    crate::mac::tuning::EVENTS
        .iter()
        .chain(crate::phy::tuning::EVENTS)
        .chain(crate::net::tuning::EVENTS)
        .chain(crate::transport::tuning::EVENTS)
        .chain(layers::EVENTS)
}

/// The declaration of event `kind` (every kind is declared by exactly one layer).
pub fn event_spec(kind: TuneEventKind) -> &'static EventSpec {
    all_events()
        .find(|e| e.kind == kind)
        .expect("every event kind is declared by a layer")
}

pub(crate) fn split(name: &str) -> Result<(&'static ParamSpec, Option<usize>), XlError> {
    let unknown = || {
        XlError::Tuning(format!(
            "unknown parameter \"{name}\"; see params() for the list"
        ))
    };
    if let Some(spec) = all_params().find(|s| s.name == name && !s.per_level && !s.per_flow) {
        return Ok((spec, None));
    }
    let (base, level) = name.rsplit_once('.').ok_or_else(unknown)?;
    let spec = all_params()
        .find(|s| s.name == base && (s.per_level || s.per_flow))
        .ok_or_else(unknown)?;
    let level: usize = level.parse().map_err(|_| {
        XlError::Tuning(format!(
            "\"{name}\": the {} suffix must be a number, as in {base}.0",
            if spec.per_flow { "flow" } else { "level" }
        ))
    })?;
    Ok((spec, Some(level)))
}

/// What the tuning layers and the optimizer host reach of an assembled network. The node
/// assembly (`crate::world::World`) implements it, dispatching each declared parameter to the
/// layer that owns it, so this module never sees the world's fields.
pub trait Host {
    fn now(&self) -> SimTime;
    fn node_count(&self) -> usize;
    /// The network's flows.
    fn flows(&self) -> &[crate::app::Flow];
    /// The optimizing subsystem and the event bus, borrowed together.
    fn tuning(&mut self) -> (&mut optimizer::OptimizerHost, &mut EventBus);
    /// Schedules an engine event (optimizer timers and wake-ups).
    fn schedule(&mut self, at: SimTime, event: crate::sim::Event);
    /// Reads declared parameter `spec` (`index`: its level, flow or node suffix) of `node`;
    /// `name` is the full name, for errors.
    fn param_get(
        &mut self,
        node: u32,
        spec: &'static ParamSpec,
        index: Option<usize>,
        name: &str,
    ) -> Result<f64, XlError>;
    /// Sets declared parameter `spec` of `node` to `value`, already checked against the
    /// declared range and for being writable.
    fn param_set(
        &mut self,
        node: u32,
        spec: &'static ParamSpec,
        index: Option<usize>,
        name: &str,
        value: f64,
    ) -> Result<(), XlError>;
    /// The K best next hops of `node` towards `dst`, best first (one under OLSR and static
    /// routing; empty if none).
    fn next_hops(&self, node: u32, dst: u32) -> Vec<u32>;
    /// Usable neighbours of `node` and its ETX to each (empty without ETX probing).
    fn etx_links(&self, node: u32) -> Vec<(u32, f64)>;
    /// `node`'s per-destination queues: (destination, length).
    fn dest_queue_lengths(&self, node: u32) -> Vec<(u32, u32)>;
    /// What `node` overheard of its neighbours' queues: (neighbour, destination, length, when
    /// heard).
    fn overheard_queues(&self, node: u32) -> Vec<(u32, u32, u32, SimTime)>;
}

/// The K best next hops of `node` towards `dst`, best first (one under OLSR and static
/// routing; empty if none).
pub fn next_hops(w: &dyn Host, node: u32, dst: u32) -> Vec<u32> {
    w.next_hops(node, dst)
}

/// Usable neighbours of `node` and its ETX to each (empty without ETX probing).
pub fn etx_links(w: &dyn Host, node: u32) -> Vec<(u32, f64)> {
    w.etx_links(node)
}

/// `node`'s per-destination queues: (destination, length).
pub fn dest_queue_lengths(w: &dyn Host, node: u32) -> Vec<(u32, u32)> {
    w.dest_queue_lengths(node)
}

/// What `node` overheard of its neighbours' queues: (neighbour, destination, length, when heard).
pub fn overheard_queues(w: &dyn Host, node: u32) -> Vec<(u32, u32, u32, SimTime)> {
    w.overheard_queues(node)
}

/// The tuning layers, in the order of [`layer_bit`] (ECLAIR's user, application, transport,
/// network, MAC and PHY tuning layers).
pub const LAYERS: [&str; 6] = ["user", "application", "transport", "net", "mac", "phy"];

/// The bit of `layer` in a set of layers (an optimizer's, `optimizer::Slot`).
pub fn layer_bit(layer: &str) -> u8 {
    LAYERS
        .iter()
        .position(|&l| l == layer)
        .map_or(0, |i| 1 << i)
}

/// Calls the tuning layer that owns `spec` at `node` through `f`, as ECLAIR isolates a layer:
/// a layer unloaded after a fatal error refuses every call, and a call that panics (a fatal
/// error inside the layer) unloads the layer of that node for the rest of the run and
/// unregisters every optimizer registered with it (`optimizer::layer_failed`); the data path
/// goes on. `name` is the parameter's full name, for errors.
fn through_layer<T>(
    w: &mut dyn Host,
    node: u32,
    spec: &'static ParamSpec,
    name: &str,
    f: impl FnOnce(&mut dyn Host) -> Result<T, XlError>,
) -> Result<T, XlError> {
    let host = w.tuning().0;
    if let Some(fail) = host.layer_failure(node, spec.layer) {
        return Err(XlError::Tuning(format!(
            "\"{name}\": the {} tuning layer of node {node} was unloaded at {} s after a fatal error ({})",
            spec.layer,
            fail.time.as_secs_f64(),
            fail.error
        )));
    }
    let inject = host.take_injected_fault(node, spec.layer);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if inject {
            panic!("fault injected into the {} tuning layer", spec.layer);
        }
        f(&mut *w)
    }));
    match r {
        Ok(r) => r,
        Err(p) => {
            let msg = optimizer::panic_message(p);
            optimizer::layer_failed(w, node, spec.layer, msg.clone());
            Err(XlError::Tuning(format!(
                "\"{name}\": the {} tuning layer of node {node} failed and is unloaded: {msg}",
                spec.layer
            )))
        }
    }
}

/// Reads a parameter of a node.
pub fn get(w: &mut dyn Host, node: u32, name: &str) -> Result<f64, XlError> {
    let (spec, index) = split(name)?;
    get_spec(w, node, spec, index, name)
}

/// Reads parameter `spec` (already looked up from `name`) of a node.
pub(crate) fn get_spec(
    w: &mut dyn Host,
    node: u32,
    spec: &'static ParamSpec,
    index: Option<usize>,
    name: &str,
) -> Result<f64, XlError> {
    through_layer(w, node, spec, name, |w| {
        w.param_get(node, spec, index, name)
    })
}

/// Sets a parameter of a node; the value is checked against the declared range.
pub fn set(w: &mut dyn Host, node: u32, name: &str, value: f64) -> Result<(), XlError> {
    let (spec, index) = split(name)?;
    set_spec(w, node, spec, index, name, value)
}

/// Sets parameter `spec` (already looked up from `name`) of a node, checked as [`set`] does.
pub(crate) fn set_spec(
    w: &mut dyn Host,
    node: u32,
    spec: &'static ParamSpec,
    index: Option<usize>,
    name: &str,
    value: f64,
) -> Result<(), XlError> {
    if spec.read_only {
        return Err(XlError::Tuning(format!("\"{name}\" is read-only")));
    }
    if !(value.is_finite() && value >= spec.min && value <= spec.max) {
        return Err(XlError::Tuning(format!(
            "\"{name}\" must be within {}..={} {}, got {value}",
            spec.min, spec.max, spec.unit
        )));
    }
    through_layer(w, node, spec, name, |w| {
        w.param_set(node, spec, index, name, value)
    })?;
    refresh_core(w, node, spec, index, name);
    Ok(())
}

/// A write through the tuning layer succeeded: counts it for the core and, if the item is in
/// the core, refreshes the cached value by reading it back through the layer (a set may round:
/// the cache holds what a read gives). Costs one branch when no optimizer is attached.
fn refresh_core(
    w: &mut dyn Host,
    node: u32,
    spec: &'static ParamSpec,
    index: Option<usize>,
    name: &str,
) {
    let host = w.tuning().0;
    if host.slots.is_empty() {
        return;
    }
    let now = w.now();
    let core = &mut w.tuning().0.core;
    core.maybe_select(now);
    let i = core.register(node, name, spec, index);
    if core.count_write(i) {
        let t = std::time::Instant::now();
        let v = get_spec(w, node, spec, index, name).ok();
        w.tuning().0.core.refreshed(i, v, t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_declared_parameter_resolves() {
        for s in all_params() {
            let name = if s.per_level || s.per_flow {
                format!("{}.0", s.name)
            } else {
                s.name.to_string()
            };
            let (spec, _) = split(&name).unwrap();
            assert_eq!(spec.name, s.name);
        }
        assert!(split("mac.bogus").is_err());
    }

    #[test]
    fn every_event_kind_is_declared_by_exactly_one_layer() {
        for k in TuneEventKind::ALL {
            assert_eq!(
                all_events().filter(|e| e.kind == k).count(),
                1,
                "{}",
                k.name()
            );
        }
        assert_eq!(all_events().count(), TuneEventKind::ALL.len());
    }
}
