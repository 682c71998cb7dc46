//! ECLAIR's optimizing subsystem: protocol optimizers attached to nodes, fed events off the
//! data path, acting only through the tuning layers (`super::get` / `super::set`).
//!
//! Contract (ECLAIR, "Tuning layer" and "Protocol optimizer" slides):
//! - An optimizer is attached to one node and registers/unregisters for event kinds of any layer
//!   of that node ([`Ctx::subscribe`]); several optimizers may register for the same event.
//! - Events published while the data path works on an instant are queued; they are delivered
//!   when the engine has executed every event of that instant (before it advances the clock), in
//!   one batch per optimizer, or `latency` later when the optimizer has a reaction latency. An
//!   optimizer therefore never runs inside a layer's call, and one that only listens cannot
//!   change the simulated results. The one exception is the `per_packet` delivery mode, which
//!   exists to measure the alternative ECLAIR argues against (a hook in the receive path): its
//!   optimizers' `latency` is processing time the packet waits in the receive path.
//! - Optimizers may schedule their own timers ([`Ctx::schedule`]); a timer is an engine event
//!   that does nothing on the data path, its callback runs at the end of the instant.
//! - Fault isolation: an optimizer whose callback returns an error or panics is unloaded and
//!   unregistered from every event; the failure (time, node, message) is kept for the result and
//!   the run goes on. A cross-layer shutdown (`user.shutdown`) unregisters every optimizer of a
//!   node.
//! - Conflicts: when an optimizer sets a parameter of a node that another optimizer set to a
//!   different value less than `conflict_window` before, the pair is recorded. A dependency
//!   cycle (A's set publishes an event B reacts to with a set whose event A reacts to...) is
//!   recorded when the "caused a set" graph closes a cycle (a possible feedback loop, recorded
//!   even if it ends by itself), and cut after [`MAX_ROUNDS_PER_INSTANT`] delivery rounds
//!   within one instant.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::Host;
use super::{TuneEvent, TuneEventKind};
use crate::error::XlError;
use crate::sim::{Event, SimTime};

/// Delivery rounds within one instant before the subsystem stops (a set/event cycle).
pub const MAX_ROUNDS_PER_INSTANT: usize = 64;

/// The `tag` of an `Event::Optimizer` that delivers delayed events instead of a timer.
const WAKE: u32 = u32::MAX;

/// A protocol optimizer. Every callback may read and set parameters through `ctx`; returning
/// `Err` (or panicking) unloads the optimizer. `Send` because a simulation may run on another
/// thread than the one that built it (the Python binding releases the GIL while running).
pub trait Optimizer: Send {
    /// Called once when the optimizer is attached (register for events here).
    fn start(&mut self, ctx: &mut Ctx<'_>) -> Result<(), String> {
        let _ = ctx;
        Ok(())
    }
    /// The events of one delivery, oldest first (only kinds registered, only this node's).
    fn on_events(&mut self, ctx: &mut Ctx<'_>, events: &[TuneEvent]) -> Result<(), String>;
    /// A timer scheduled with [`Ctx::schedule`] fired.
    fn on_timer(&mut self, ctx: &mut Ctx<'_>, tag: u32) -> Result<(), String> {
        let _ = (ctx, tag);
        Ok(())
    }
}

/// How events reach an optimizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// ECLAIR: queued, delivered after the data path finished the instant (plus the latency).
    OffPath,
    /// The "protocol modification" alternative, for overhead measurements: the optimizer is
    /// called synchronously inside the TCP receive path for every segment its node receives
    /// (event `transport.segment_rx`), before the receiver processes it.
    PerPacket,
}

/// What became of an optimizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Active,
    /// Unloaded after an error or a panic.
    Failed,
    /// Unregistered by a cross-layer shutdown of its node.
    Shutdown,
    /// Unregistered because a tuning layer it was registered with failed and was unloaded.
    LayerFailed,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Failed => "failed",
            Status::Shutdown => "shutdown",
            Status::LayerFailed => "layer_failed",
        }
    }
}

/// One attached optimizer and its bookkeeping.
pub struct Slot {
    pub name: String,
    /// "rust" or "python".
    pub language: &'static str,
    pub node: u32,
    pub latency: SimTime,
    pub conflict_window: SimTime,
    pub delivery: Delivery,
    opt: Option<Box<dyn Optimizer>>,
    /// Registered kinds (bit i = `TuneEventKind::ALL[i]`).
    mask: u32,
    /// The tuning layers it is registered with (`super::layer_bit`): those of the events it
    /// registered for and of the parameters it read or set.
    layers: u8,
    pub status: Status,
    pub error: Option<String>,
    pub ended_at: Option<SimTime>,
    pub deliveries: u64,
    pub events: u64,
    pub timers: u64,
    pub sets: u64,
    batch: Vec<TuneEvent>,
    /// Optimizers whose sets caused events in `batch` (for cycle detection).
    batch_causes: Vec<usize>,
    /// Events waiting for the reaction latency: (due, event, cause).
    delayed: std::collections::VecDeque<(SimTime, TuneEvent, Option<usize>)>,
    wake_at: Option<SimTime>,
}

/// Two optimizers set the same parameter of the same node to different values within the
/// later one's conflict window; or a dependency cycle (`param` = "cycle").
#[derive(Debug, Clone)]
pub struct Conflict {
    pub kind: &'static str,
    pub time: SimTime,
    pub node: u32,
    pub param: String,
    /// Index of the optimizer (its row in the `optimizers` table) and of the other one.
    pub optimizer_id: usize,
    pub other_id: usize,
    pub optimizer: String,
    pub value: f64,
    pub other: String,
    pub other_value: f64,
    pub other_time: SimTime,
}

/// The optimizing subsystem of a world (and the user tuning layer's state).
#[derive(Default)]
pub struct OptimizerHost {
    pub slots: Vec<Slot>,
    /// Optimizers of each node, in attachment order.
    by_node: Vec<Vec<usize>>,
    /// Any optimizer active: the run loop checks this one flag per event.
    active: bool,
    /// Any per-packet optimizer active.
    pub(crate) per_packet: bool,
    due_timers: Vec<(u32, u32)>,
    scratch: Vec<TuneEvent>,
    /// Ranges of the bus's pending events (not yet handed over) an optimizer's call published.
    causes: Vec<(usize, usize, usize)>,
    last_set: HashMap<(u32, String), (SimTime, usize, f64)>,
    pub conflicts: Vec<Conflict>,
    /// "A's set caused an event B reacted to with a set" edges.
    edges: Vec<(usize, usize)>,
    current_causes: Vec<usize>,
    /// Optimizer events executed by the engine (timers and wake-ups), not counted as the
    /// simulation's events.
    pub engine_events: u64,
    /// Wall time spent in optimizer callbacks.
    pub callback_wall: std::time::Duration,
    user_priority: Vec<f64>,
    shut_down: Vec<u32>,
    shutdown_pending: Vec<u32>,
    /// Tuning layers unloaded after a fatal error.
    pub failed_layers: Vec<LayerFailure>,
    /// ECLAIR's core: the items cached for the optimizers' reads.
    pub core: super::core::Core,
    /// Wall time the subsystem spends off the data path (deliveries, timers, their callbacks)
    /// and in per-packet hooks: ECLAIR's time overhead.
    pub subsystem_wall: std::time::Duration,
    /// Calls of Python optimizers' callbacks (core to Python).
    pub python_invocations: u64,
    /// Crossings between the core and Python optimizers: their callbacks' invocations and
    /// their calls into the core during them (the analogue of user-kernel crossings).
    pub crossings: u64,
    /// Packets that went through a per-packet hook, and the simulated processing latency the
    /// hooks' optimizers added to them (the data-path delay; off-path optimizers add none).
    pub hooked_packets: u64,
    pub hook_delay: SimTime,
    /// Faults to inject into a node's tuning layer at its next call ([`inject_layer_fault`]).
    injected: Vec<(u32, &'static str)>,
}

/// A tuning layer of a node unloaded after a fatal error (a panic inside the layer).
#[derive(Debug, Clone)]
pub struct LayerFailure {
    pub node: u32,
    pub layer: &'static str,
    pub time: SimTime,
    pub error: String,
}

impl OptimizerHost {
    #[inline]
    pub fn is_active(&self) -> bool {
        self.active
    }

    pub fn user_priority(&self, flow: usize) -> f64 {
        self.user_priority.get(flow).copied().unwrap_or(1.0)
    }

    pub(crate) fn set_user_priority(&mut self, flow: usize, x: f64) {
        if self.user_priority.len() <= flow {
            self.user_priority.resize(flow + 1, 1.0);
        }
        self.user_priority[flow] = x;
    }

    /// The failure that unloaded `layer` of `node`, if it failed.
    pub fn layer_failure(&self, node: u32, layer: &str) -> Option<&LayerFailure> {
        self.failed_layers
            .iter()
            .find(|f| f.node == node && f.layer == layer)
    }

    /// Whether a fault was injected into `layer` of `node` (and takes it).
    pub(crate) fn take_injected_fault(&mut self, node: u32, layer: &str) -> bool {
        match self
            .injected
            .iter()
            .position(|&(n, l)| n == node && l == layer)
        {
            Some(i) => {
                self.injected.swap_remove(i);
                true
            }
            None => false,
        }
    }

    pub fn is_shut_down(&self, node: u32) -> bool {
        self.shut_down.contains(&node)
    }

    /// An `Event::Optimizer` fired: its work runs at the end of the instant.
    pub(crate) fn fired(&mut self, slot: u32, tag: u32) {
        self.engine_events += 1;
        self.due_timers.push((slot, tag));
    }

    /// Bytes the subsystem holds (its tables and buffers, by capacity; not the optimizers'
    /// own state, e.g. a Python object): ECLAIR's space overhead.
    pub fn memory_bytes(&self) -> usize {
        use std::mem::size_of;
        let ev = size_of::<TuneEvent>();
        let slots: usize = self
            .slots
            .iter()
            .map(|s| {
                s.name.capacity()
                    + s.error.as_ref().map_or(0, |e| e.capacity())
                    + s.batch.capacity() * ev
                    + s.batch_causes.capacity() * size_of::<usize>()
                    + s.delayed.capacity() * size_of::<(SimTime, TuneEvent, Option<usize>)>()
            })
            .sum();
        size_of::<OptimizerHost>()
            + self.slots.capacity() * size_of::<Slot>()
            + slots
            + self
                .by_node
                .iter()
                .map(|v| v.capacity() * size_of::<usize>())
                .sum::<usize>()
            + self.by_node.capacity() * size_of::<Vec<usize>>()
            + self.due_timers.capacity() * size_of::<(u32, u32)>()
            + self.scratch.capacity() * ev
            + self.causes.capacity() * size_of::<(usize, usize, usize)>()
            + self
                .last_set
                .keys()
                .map(|k| k.1.capacity() + size_of::<((u32, String), (SimTime, usize, f64))>())
                .sum::<usize>()
            + self.conflicts.capacity() * size_of::<Conflict>()
            + self.edges.capacity() * size_of::<(usize, usize)>()
            + self.user_priority.capacity() * size_of::<f64>()
            + self.core.memory_bytes()
    }

    fn refresh_active(&mut self) {
        self.active = self.slots.iter().any(|s| s.status == Status::Active);
        self.per_packet = self
            .slots
            .iter()
            .any(|s| s.status == Status::Active && s.delivery == Delivery::PerPacket);
    }
}

/// What an optimizer sees of the world during a callback: its node's tuning layers.
pub struct Ctx<'a> {
    world: &'a mut dyn Host,
    slot: usize,
    node: u32,
}

impl Ctx<'_> {
    /// The node the optimizer is attached to.
    pub fn node(&self) -> u32 {
        self.node
    }

    pub fn now(&self) -> SimTime {
        self.world.now()
    }

    /// The network's flows, e.g. to find the node's connections.
    pub fn flows(&self) -> &[crate::app::Flow] {
        self.world.flows()
    }

    /// Records that the optimizer uses the tuning layer `layer`.
    fn uses(&mut self, layer: &str) {
        self.world.tuning().0.slots[self.slot].layers |= super::layer_bit(layer);
    }

    /// Reads a parameter of the node: from the core ([`super::core`]) if the item is in it,
    /// else through its tuning layer. Either way the read is counted for the core's selection.
    pub fn get(&mut self, name: &str) -> Result<f64, XlError> {
        let now = self.world.now();
        let host = self.world.tuning().0;
        host.core.maybe_select(now);
        let t = host.core.start_read();
        let i = match host.core.lookup(self.node, name) {
            Some(i) => i,
            None => {
                let (spec, index) = super::split(name)?;
                host.core.register(self.node, name, spec, index)
            }
        };
        let t = host.core.count_read(i, t);
        let (spec, index) = (host.core.items[i].spec, host.core.items[i].index);
        host.slots[self.slot].layers |= super::layer_bit(spec.layer);
        // A layer unloaded or a fault pending injection must see the call: no cached read then.
        if host.failed_layers.is_empty() && host.injected.is_empty() && host.core.serving() {
            if let Some(v) = host.core.cached(i) {
                if host.core.cfg.mode == super::core::CoreMode::Verify {
                    let through = super::get_spec(self.world, self.node, spec, index, name);
                    let host = self.world.tuning().0;
                    if through.ok().map(f64::to_bits) != Some(v.to_bits()) {
                        host.core.mismatches += 1;
                    }
                    host.core.hit(i, None);
                } else {
                    host.core.hit(i, t);
                }
                return Ok(v);
            }
        }
        let r = super::get_spec(self.world, self.node, spec, index, name);
        self.world
            .tuning()
            .0
            .core
            .missed(i, r.as_ref().ok().copied(), t);
        r
    }

    /// Counts one call of a Python optimizer into the core (the binding calls it on every use
    /// of its context): ECLAIR's user-kernel crossings.
    pub fn count_crossing(&mut self) {
        self.world.tuning().0.crossings += 1;
    }

    /// Sets a parameter of the node through its tuning layer (recorded for conflicts).
    pub fn set(&mut self, name: &str, value: f64) -> Result<(), XlError> {
        let (spec, index) = super::split(name)?;
        self.uses(spec.layer);
        super::set_spec(self.world, self.node, spec, index, name, value)?;
        let now = self.world.now();
        let host = self.world.tuning().0;
        host.slots[self.slot].sets += 1;
        let window = host.slots[self.slot].conflict_window;
        let key = (self.node, name.to_string());
        if let Some(&(t, other, v)) = host.last_set.get(&key) {
            if other != self.slot && v != value && now.ns() - t.ns() <= window.ns() {
                host.conflicts.push(Conflict {
                    kind: "conflict",
                    time: now,
                    node: self.node,
                    param: name.to_string(),
                    optimizer_id: self.slot,
                    other_id: other,
                    optimizer: host.slots[self.slot].name.clone(),
                    value,
                    other: host.slots[other].name.clone(),
                    other_value: v,
                    other_time: t,
                });
            }
        }
        host.last_set.insert(key, (now, self.slot, value));
        let causes = std::mem::take(&mut host.current_causes);
        for &c in &causes {
            add_edge(host, c, self.slot, name);
        }
        host.current_causes = causes;
        Ok(())
    }

    /// Registers for events of `kind` on this node.
    pub fn subscribe(&mut self, kind: TuneEventKind) {
        let (host, events) = self.world.tuning();
        let s = &mut host.slots[self.slot];
        let bit = 1u32 << kind.index();
        s.layers |= super::layer_bit(super::event_spec(kind).layer);
        if s.mask & bit == 0 {
            s.mask |= bit;
            events.register(kind);
        }
    }

    /// Registers for events by name ("mac.tx_outcome", ...).
    pub fn subscribe_name(&mut self, kind: &str) -> Result<(), XlError> {
        let k = TuneEventKind::from_name(kind).ok_or_else(|| unknown_kind(kind))?;
        self.subscribe(k);
        Ok(())
    }

    /// Unregisters from events of `kind`.
    pub fn unsubscribe(&mut self, kind: TuneEventKind) {
        let (host, events) = self.world.tuning();
        let s = &mut host.slots[self.slot];
        let bit = 1u32 << kind.index();
        if s.mask & bit != 0 {
            s.mask &= !bit;
            events.unregister(kind);
        }
    }

    /// Calls [`Optimizer::on_timer`] with `tag` after `delay` (tags below `u32::MAX`).
    pub fn schedule(&mut self, delay: SimTime, tag: u32) -> Result<(), XlError> {
        if tag == WAKE {
            return Err(XlError::Tuning(format!("timer tag {WAKE} is reserved")));
        }
        let at = self.world.now() + delay;
        self.world.schedule(
            at,
            Event::Optimizer {
                slot: self.slot as u32,
                tag,
            },
        );
        Ok(())
    }
}

pub fn unknown_kind(kind: &str) -> XlError {
    let names: Vec<&str> = TuneEventKind::ALL.iter().map(|k| k.name()).collect();
    XlError::Tuning(format!("unknown event kind \"{kind}\"; known: {names:?}"))
}

fn add_edge(host: &mut OptimizerHost, from: usize, to: usize, param: &str) {
    if host.edges.contains(&(from, to)) {
        return;
    }
    host.edges.push((from, to));
    // Does `to` reach `from`? Then the new edge closes a cycle.
    let mut seen = vec![false; host.slots.len()];
    let mut stack = vec![to];
    while let Some(n) = stack.pop() {
        if n == from {
            let now = host
                .last_set
                .values()
                .map(|v| v.0)
                .max()
                .unwrap_or(SimTime::ZERO);
            host.conflicts.push(Conflict {
                kind: "cycle",
                time: now,
                node: host.slots[to].node,
                param: param.to_string(),
                optimizer_id: to,
                other_id: from,
                optimizer: host.slots[to].name.clone(),
                value: f64::NAN,
                other: host.slots[from].name.clone(),
                other_value: f64::NAN,
                other_time: now,
            });
            return;
        }
        if std::mem::replace(&mut seen[n], true) {
            continue;
        }
        stack.extend(host.edges.iter().filter(|e| e.0 == n).map(|e| e.1));
    }
}

/// Options of an attached optimizer.
#[derive(Debug, Clone)]
pub struct AttachOptions {
    pub name: String,
    pub language: &'static str,
    pub latency: SimTime,
    pub conflict_window: SimTime,
    pub delivery: Delivery,
}

impl AttachOptions {
    pub fn new(name: impl Into<String>) -> AttachOptions {
        AttachOptions {
            name: name.into(),
            language: "rust",
            latency: SimTime::ZERO,
            conflict_window: SimTime::from_secs_f64(1.0),
            delivery: Delivery::OffPath,
        }
    }
}

/// Attaches `opt` to `node` and runs its `start`. Returns the optimizer's index. A failing
/// `start` unloads it like any other failure.
pub fn attach<H: Host>(
    w: &mut H,
    node: u32,
    opt: Box<dyn Optimizer>,
    o: AttachOptions,
) -> Result<usize, XlError> {
    if node as usize >= w.node_count() {
        return Err(XlError::Tuning(format!(
            "optimizer \"{}\": node {node} does not exist (0..{})",
            o.name,
            w.node_count().saturating_sub(1)
        )));
    }
    let host = w.tuning().0;
    let slot = host.slots.len();
    if host.by_node.len() <= node as usize {
        host.by_node.resize(node as usize + 1, Vec::new());
    }
    host.by_node[node as usize].push(slot);
    host.slots.push(Slot {
        name: o.name,
        language: o.language,
        node,
        latency: o.latency,
        conflict_window: o.conflict_window,
        delivery: o.delivery,
        opt: Some(opt),
        mask: 0,
        layers: 0,
        status: Status::Active,
        error: None,
        ended_at: None,
        deliveries: 0,
        events: 0,
        timers: 0,
        sets: 0,
        batch: Vec::new(),
        batch_causes: Vec::new(),
        delayed: Default::default(),
        wake_at: None,
    });
    host.refresh_active();
    if host.is_shut_down(node) {
        unload(w, slot, Status::Shutdown, None);
        return Ok(slot);
    }
    call(w, slot, |o, ctx| o.start(ctx));
    Ok(slot)
}

/// Unregisters optimizer `slot` from every event and drops it.
fn unload<H: Host + ?Sized>(w: &mut H, slot: usize, status: Status, error: Option<String>) {
    let now = w.now();
    let (host, events) = w.tuning();
    let s = &mut host.slots[slot];
    if s.status != Status::Active {
        return;
    }
    s.status = status;
    s.error = error;
    s.ended_at = Some(now);
    s.opt = None;
    s.batch.clear();
    s.delayed.clear();
    let mask = std::mem::take(&mut s.mask);
    for k in TuneEventKind::ALL {
        if mask & (1 << k.index()) != 0 {
            events.unregister(k);
        }
    }
    host.refresh_active();
}

/// Cross-layer shutdown of `node` (the user set `user.shutdown`): its optimizers still receive
/// the instant's events (the `user.shutdown` event among them), then are unregistered when the
/// instant's deliveries end; optimizers attached later are refused.
pub(crate) fn request_shutdown<H: Host + ?Sized>(w: &mut H, node: u32) {
    let host = w.tuning().0;
    if !host.shut_down.contains(&node) {
        host.shut_down.push(node);
        host.shutdown_pending.push(node);
    }
}

fn shutdown<H: Host>(w: &mut H, node: u32) {
    for slot in 0..w.tuning().0.slots.len() {
        if w.tuning().0.slots[slot].node == node {
            unload(w, slot, Status::Shutdown, None);
        }
    }
}

/// A fatal error (`error`) inside `layer` of `node`: the layer is unloaded for the rest of the
/// run (every later call refuses, `super::get`/`super::set`), and every optimizer of the node
/// registered with it is unregistered and dropped, its pending deliveries and timers with it
/// (ECLAIR: "a tuning layer failure unregisters the optimizers registered with it"). The data
/// path does not go through the tuning layers and goes on.
pub(crate) fn layer_failed(w: &mut dyn Host, node: u32, layer: &'static str, error: String) {
    let now = w.now();
    let bit = super::layer_bit(layer);
    let host = w.tuning().0;
    host.failed_layers.push(LayerFailure {
        node,
        layer,
        time: now,
        error: error.clone(),
    });
    for slot in 0..host.slots.len() {
        let s = &w.tuning().0.slots[slot];
        if s.node == node && s.status == Status::Active && s.layers & bit != 0 {
            unload(
                w,
                slot,
                Status::LayerFailed,
                Some(format!(
                    "the {layer} tuning layer of node {node} failed: {error}"
                )),
            );
        }
    }
}

/// Makes the next call into `layer` of `node` fail as a fatal error inside the layer would (a
/// panic): fault injection, to exercise tuning-layer failure (as ns-3's error models inject
/// packet errors). `layer` is one of [`super::LAYERS`].
pub fn inject_layer_fault(w: &mut dyn Host, node: u32, layer: &str) -> Result<(), XlError> {
    let Some(&l) = super::LAYERS.iter().find(|&&l| l == layer) else {
        return Err(XlError::Tuning(format!(
            "unknown tuning layer \"{layer}\"; one of {:?}",
            super::LAYERS
        )));
    };
    if node as usize >= w.node_count() {
        return Err(XlError::Tuning(format!("node {node} does not exist")));
    }
    w.tuning().0.injected.push((node, l));
    Ok(())
}

pub(crate) fn panic_message(e: Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic".into())
}

/// Runs one callback of optimizer `slot` with fault isolation, attributing the events it
/// publishes (through its sets) to it.
fn call<H: Host>(
    w: &mut H,
    slot: usize,
    f: impl FnOnce(&mut dyn Optimizer, &mut Ctx<'_>) -> Result<(), String>,
) {
    let Some(mut opt) = w.tuning().0.slots[slot].opt.take() else {
        return;
    };
    let node = w.tuning().0.slots[slot].node;
    if w.tuning().0.slots[slot].language == "python" {
        let host = w.tuning().0;
        host.python_invocations += 1;
        host.crossings += 1;
    }
    let before = w.tuning().1.pending_len();
    let started = std::time::Instant::now();
    let r = catch_unwind(AssertUnwindSafe(|| {
        let mut ctx = Ctx {
            world: &mut *w,
            slot,
            node,
        };
        f(&mut *opt, &mut ctx)
    }));
    w.tuning().0.callback_wall += started.elapsed();
    w.tuning().0.current_causes.clear();
    let after = w.tuning().1.pending_len();
    if after > before {
        w.tuning().0.causes.push((before, after, slot));
    }
    let error = match r {
        Ok(Ok(())) => None,
        Ok(Err(msg)) => Some(msg),
        Err(p) => Some(format!("panicked: {}", panic_message(p))),
    };
    match error {
        None => {
            if w.tuning().0.slots[slot].status == Status::Active {
                w.tuning().0.slots[slot].opt = Some(opt);
            }
        }
        Some(msg) => {
            w.tuning().0.slots[slot].opt = Some(opt);
            unload(w, slot, Status::Failed, Some(msg));
        }
    }
}

/// Delivers what the instant produced: timers that fired, then the queued events, one batch
/// per optimizer in attachment order; repeats while optimizers' sets publish new events.
#[inline]
pub(crate) fn end_of_instant<H: Host>(w: &mut H) {
    if w.tuning().1.pending_len() == 0
        && w.tuning().0.due_timers.is_empty()
        && w.tuning().0.shutdown_pending.is_empty()
    {
        return;
    }
    let started = std::time::Instant::now();
    deliver(w);
    w.tuning().0.subsystem_wall += started.elapsed();
}

fn deliver<H: Host>(w: &mut H) {
    for _round in 0..MAX_ROUNDS_PER_INSTANT {
        let now = w.now();
        let mut events = std::mem::take(&mut w.tuning().0.scratch);
        events.clear();
        w.tuning().1.take_for_optimizers(&mut events);
        let causes = std::mem::take(&mut w.tuning().0.causes);
        let timers = std::mem::take(&mut w.tuning().0.due_timers);
        if events.is_empty() && timers.is_empty() {
            w.tuning().0.scratch = events;
            for node in std::mem::take(&mut w.tuning().0.shutdown_pending) {
                shutdown(w, node);
            }
            return;
        }
        // Queue each event for the optimizers of its node registered for its kind.
        let mut wakes: Vec<(SimTime, usize)> = Vec::new();
        for (i, ev) in events.iter().enumerate() {
            let cause = causes
                .iter()
                .find(|&&(start, end, _)| i >= start && i < end)
                .map(|&(_, _, s)| s);
            let bit = 1u32 << ev.kind.index();
            let host = w.tuning().0;
            let count = host.by_node.get(ev.node as usize).map_or(0, |v| v.len());
            for j in 0..count {
                let slot = host.by_node[ev.node as usize][j];
                let s = &mut host.slots[slot];
                if s.mask & bit == 0 || s.status != Status::Active {
                    continue;
                }
                if s.delivery == Delivery::PerPacket && ev.kind == TuneEventKind::TcpSegmentRx {
                    continue; // delivered inside the receive path already
                }
                if s.latency == SimTime::ZERO {
                    s.batch.push(*ev);
                    if let Some(c) = cause {
                        if !s.batch_causes.contains(&c) {
                            s.batch_causes.push(c);
                        }
                    }
                } else {
                    let due = ev.time + s.latency;
                    s.delayed.push_back((due, *ev, cause));
                    if s.wake_at.is_none_or(|t| t < due) {
                        s.wake_at = Some(due);
                        wakes.push((due, slot));
                    }
                }
            }
            // Scheduled in the order they were decided.
            for &(due, slot) in &wakes {
                w.schedule(
                    due,
                    Event::Optimizer {
                        slot: slot as u32,
                        tag: WAKE,
                    },
                );
            }
            wakes.clear();
        }
        w.tuning().0.scratch = events;
        for &(slot, tag) in &timers {
            let slot = slot as usize;
            if w.tuning().0.slots[slot].status != Status::Active {
                continue;
            }
            if tag == WAKE {
                let s = &mut w.tuning().0.slots[slot];
                while s.delayed.front().is_some_and(|d| d.0 <= now) {
                    let (_, ev, cause) = s.delayed.pop_front().expect("front");
                    s.batch.push(ev);
                    if let Some(c) = cause {
                        if !s.batch_causes.contains(&c) {
                            s.batch_causes.push(c);
                        }
                    }
                }
                if s.wake_at.is_some_and(|t| t <= now) {
                    s.wake_at = None;
                }
                continue;
            }
            w.tuning().0.slots[slot].timers += 1;
            call(w, slot, |o, ctx| o.on_timer(ctx, tag));
        }
        for slot in 0..w.tuning().0.slots.len() {
            if w.tuning().0.slots[slot].batch.is_empty() {
                continue;
            }
            let batch = std::mem::take(&mut w.tuning().0.slots[slot].batch);
            let causes = std::mem::take(&mut w.tuning().0.slots[slot].batch_causes);
            let s = &mut w.tuning().0.slots[slot];
            s.deliveries += 1;
            s.events += batch.len() as u64;
            w.tuning().0.current_causes = causes;
            call(w, slot, |o, ctx| o.on_events(ctx, &batch));
            let mut batch = batch;
            batch.clear();
            if w.tuning().0.slots[slot].batch.is_empty() {
                w.tuning().0.slots[slot].batch = batch;
            }
        }
    }
    // Still producing events after MAX_ROUNDS_PER_INSTANT rounds: a cycle; drop this instant's
    // remaining events so the run goes on.
    let mut rest = Vec::new();
    w.tuning().1.take_for_optimizers(&mut rest);
    w.tuning().0.causes.clear();
    for node in std::mem::take(&mut w.tuning().0.shutdown_pending) {
        shutdown(w, node);
    }
}

/// The per-packet hook (`Delivery::PerPacket`): called from the TCP receive path of `node`.
///
/// The hook runs synchronously in the receive path: the optimizers it calls process the packet
/// one after the other, each for its `latency` (its processing time), before the packet goes on
/// up the stack. The returned delay is their sum; the caller delivers the packet to its
/// transport that much later (`World::sink`), so a TCP receiver acknowledges it later and the
/// flow's measured delay includes it. It is also accounted (`hook_delay`,
/// `eclair_data_path_delay_s`). Off the data path (every other delivery mode) a latency delays
/// only the optimizer's view of events, never a packet.
pub(crate) fn per_packet<H: Host>(w: &mut H, node: u32, flow: u32, bytes: u32) -> SimTime {
    let started = std::time::Instant::now();
    let delay = per_packet_calls(w, node, flow, bytes);
    w.tuning().0.subsystem_wall += started.elapsed();
    delay
}

fn per_packet_calls<H: Host>(w: &mut H, node: u32, flow: u32, bytes: u32) -> SimTime {
    let now = w.now();
    let mut hooked = false;
    let mut delay = SimTime::ZERO;
    let count = w
        .tuning()
        .0
        .by_node
        .get(node as usize)
        .map_or(0, |v| v.len());
    for j in 0..count {
        let slot = w.tuning().0.by_node[node as usize][j];
        let s = &w.tuning().0.slots[slot];
        if s.status != Status::Active
            || s.delivery != Delivery::PerPacket
            || s.mask & (1 << TuneEventKind::TcpSegmentRx.index()) == 0
        {
            continue;
        }
        let ev = [TuneEvent {
            time: now,
            node,
            kind: TuneEventKind::TcpSegmentRx,
            value: bytes as f64,
            flow: Some(flow),
        }];
        let s = &mut w.tuning().0.slots[slot];
        s.deliveries += 1;
        s.events += 1;
        let latency = s.latency;
        let host = w.tuning().0;
        host.hook_delay += latency;
        delay += latency;
        hooked = true;
        call(w, slot, |o, ctx| o.on_events(ctx, &ev));
    }
    if hooked {
        w.tuning().0.hooked_packets += 1;
    }
    delay
}

/// A built-in optimizer by name (`[[optimizers]] rust = "..."`).
pub fn builtin(
    name: &str,
    args: &serde_json::Map<String, serde_json::Value>,
) -> Result<Box<dyn Optimizer>, String> {
    match name {
        "rwc" => Ok(Box::new(super::rwc::Rwc::from_args(args)?)),
        "listen" => Ok(Box::new(Listen::from_args(args)?)),
        "schedule" => Ok(Box::new(Schedule::from_args(args)?)),
        "flavor_link" => Ok(Box::new(super::flavor_link::FlavorLink::from_args(args)?)),
        _ => Err(format!(
            "unknown built-in optimizer \"{name}\"; allowed: \"rwc\", \"listen\", \"schedule\", \"flavor_link\""
        )),
    }
}

fn arg_f64(
    args: &serde_json::Map<String, serde_json::Value>,
    key: &str,
    default: f64,
) -> Result<f64, String> {
    match args.get(key) {
        None => Ok(default),
        Some(v) => v
            .as_f64()
            .ok_or_else(|| format!("args.{key}: must be a number, found {v}")),
    }
}

fn check_keys(
    args: &serde_json::Map<String, serde_json::Value>,
    allowed: &[&str],
) -> Result<(), String> {
    for k in args.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(format!("args.{k}: unknown argument; allowed: {allowed:?}"));
        }
    }
    Ok(())
}

/// `listen`: registers for `events` (names; default every kind) and counts them, spinning
/// `work` iterations per delivered event (a stand-in for an optimizer's algorithm, as the
/// empty loops of ECLAIR's overhead experiments); with `timer_hz` > 0 it also spins `work`
/// iterations on a periodic timer. It never sets anything.
pub struct Listen {
    kinds: Vec<TuneEventKind>,
    work: u64,
    /// A parameter read through the tuning layer per event and per timer (the benchmark's
    /// Python optimizers do the same read, so the two languages do the same work).
    read: Option<String>,
    timer: Option<SimTime>,
    pub seen: u64,
    sink: u64,
}

impl Listen {
    pub fn from_args(args: &serde_json::Map<String, serde_json::Value>) -> Result<Listen, String> {
        check_keys(args, &["events", "work", "timer_hz", "read"])?;
        let read = match args.get("read") {
            None => None,
            Some(serde_json::Value::String(s)) => {
                super::split(s).map_err(|e| format!("args.read: {e}"))?;
                Some(s.clone())
            }
            Some(v) => return Err(format!("args.read: must be a parameter name, found {v}")),
        };
        let kinds = match args.get("events") {
            None => TuneEventKind::ALL.to_vec(),
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .map(|v| {
                    v.as_str()
                        .and_then(TuneEventKind::from_name)
                        .ok_or_else(|| unknown_kind(&v.to_string()).to_string())
                })
                .collect::<Result<_, _>>()?,
            Some(v) => return Err(format!("args.events: must be a list of names, found {v}")),
        };
        let work = arg_f64(args, "work", 0.0)?;
        let hz = arg_f64(args, "timer_hz", 0.0)?;
        // Bounded so a run ends: 1e12 iterations per event, or a timer rounding to 0 ns
        // (re-armed at the same instant for ever), never would.
        if !(0.0..=1e9).contains(&work) {
            return Err(format!(
                "args.work: must be 0..=1e9 iterations, found {work}"
            ));
        }
        if !(0.0..=1e6).contains(&hz) {
            return Err(format!(
                "args.timer_hz: must be 0..=1e6 (a timer at least 1 us apart), found {hz}"
            ));
        }
        Ok(Listen {
            kinds,
            work: work as u64,
            read,
            timer: (hz > 0.0).then(|| SimTime::from_secs_f64(1.0 / hz)),
            seen: 0,
            sink: 0,
        })
    }

    /// The work of one event or timer: the read, if any, then the spin.
    fn touch(&mut self, ctx: &mut Ctx<'_>) -> Result<(), String> {
        if let Some(name) = &self.read {
            let v = ctx.get(name).map_err(|e| e.to_string())?;
            self.sink = self.sink.wrapping_add(v.to_bits());
        }
        self.spin();
        Ok(())
    }

    fn spin(&mut self) {
        let mut x = self.sink;
        for i in 0..self.work {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
        self.sink = x;
    }
}

impl Optimizer for Listen {
    fn start(&mut self, ctx: &mut Ctx<'_>) -> Result<(), String> {
        for &k in &self.kinds {
            ctx.subscribe(k);
        }
        if let Some(p) = self.timer {
            ctx.schedule(p, 0).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
    fn on_events(&mut self, ctx: &mut Ctx<'_>, events: &[TuneEvent]) -> Result<(), String> {
        self.seen += events.len() as u64;
        for _ in events {
            self.touch(ctx)?;
        }
        Ok(())
    }
    fn on_timer(&mut self, ctx: &mut Ctx<'_>, _tag: u32) -> Result<(), String> {
        self.touch(ctx)?;
        if let Some(p) = self.timer {
            ctx.schedule(p, 0).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// `schedule`: the user's actions at given times, `actions = [{ at_s, param, value }, ...]`,
/// set through the node's tuning layers (e.g. a priority change for RWC).
pub struct Schedule {
    actions: Vec<(f64, String, f64)>,
}

impl Schedule {
    pub fn from_args(
        args: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Schedule, String> {
        check_keys(args, &["actions"])?;
        let Some(serde_json::Value::Array(list)) = args.get("actions") else {
            return Err("args.actions: a list of { at_s, param, value } is required".into());
        };
        let mut actions = Vec::new();
        for (i, a) in list.iter().enumerate() {
            let get = |k: &str| {
                a.get(k)
                    .ok_or_else(|| format!("args.actions[{i}].{k}: missing"))
            };
            let at = get("at_s")?
                .as_f64()
                .filter(|t| t.is_finite() && *t >= 0.0)
                .ok_or_else(|| format!("args.actions[{i}].at_s: must be a time >= 0"))?;
            let param = get("param")?
                .as_str()
                .ok_or_else(|| format!("args.actions[{i}].param: must be a parameter name"))?
                .to_string();
            let value = get("value")?
                .as_f64()
                .ok_or_else(|| format!("args.actions[{i}].value: must be a number"))?;
            actions.push((at, param, value));
        }
        Ok(Schedule { actions })
    }
}

impl Optimizer for Schedule {
    fn start(&mut self, ctx: &mut Ctx<'_>) -> Result<(), String> {
        let now = ctx.now();
        for (i, &(at, _, _)) in self.actions.iter().enumerate() {
            let at = SimTime::from_secs_f64(at).max(now);
            ctx.schedule(at - now, i as u32)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
    fn on_events(&mut self, _: &mut Ctx<'_>, _: &[TuneEvent]) -> Result<(), String> {
        Ok(())
    }
    fn on_timer(&mut self, ctx: &mut Ctx<'_>, tag: u32) -> Result<(), String> {
        let (_, param, value) = &self.actions[tag as usize];
        ctx.set(param, *value).map_err(|e| e.to_string())
    }
}

/// A built-in's argument error as a scenario error naming the field.
pub(crate) fn builtin_error(field: &str, m: String) -> XlError {
    match m.split_once(": ") {
        Some((f, msg)) if f.starts_with("args.") => XlError::scenario(format!("{field}.{f}"), msg),
        _ => XlError::scenario(format!("{field}.rust"), m),
    }
}
