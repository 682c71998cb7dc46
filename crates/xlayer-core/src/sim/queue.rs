//! The future event list: a 4-ary min-heap of compact `(time, sequence)` keys, with the events
//! themselves in a side array.
//!
//! The sequence number makes equal-time events first-in first-out, so a run is reproducible
//! whatever the heap's internal order (SimPy and ns-3 order their schedulers the same way).
//!
//! A heap entry is one `u128`: the time in the high 64 bits, then the sequence number (32 bits),
//! a bit set for a timer's entry, and the slot of the event in the side array (31 bits).
//! Sequence numbers are unique, so comparing entries as integers orders them by
//! `(time, sequence)` and the slot bits never decide. Four children share one or two cache
//! lines, which is what the sift-down of a large queue pays for. When the 32-bit sequence would
//! overflow, the pending entries are renumbered in their order ([`EventQueue::renumber`]), which
//! keeps every future comparison what it would have been.
//!
//! A pop leaves its entry at the root as a hole (the field `hole`) instead of refilling the
//! root at once: most events schedule one or more new ones, and the first of them takes the hole
//! with one sift-down, where a refill then a push paid a sift-down and a sift-up. The popped key
//! is below every pending and every future key (times never go back, sequence numbers only
//! grow), so a sift-up stops under it and every other operation is unchanged; a pop or a peek
//! with no push in between refills the root first.
//!
//! An event that a handler knows may well be the next to run (the next receiver of a signal
//! chain, due nanoseconds later or at the same instant) can be scheduled with
//! [`EventQueue::schedule_next`]: it takes its sequence number there, as [`EventQueue::schedule`]
//! would, but waits outside the heap until the handler returns. Then [`EventQueue::take_next`]
//! either hands it back to run at once, when its key is below every pending one (the heap would
//! have popped it next), or puts it in the heap with the key it would have had. Either way the
//! order of events is the same as with `schedule`; what is saved, when it runs at once, is its
//! slot, its sift-down and its pop.
//!
//! Timers ([`TimerId`]) own a permanent slot: re-arming one moves its entry (with a fresh
//! sequence number, exactly as a new event would get) and cancelling one removes it, so a
//! cancelled timer is never popped. Nothing on the hot path allocates once the vectors have
//! reached the run's peak size.

use super::{Event, SimTime};

/// Sequence numbers above this are renumbered first (`u32::MAX`; lowered by tests).
const SEQ_MAX: u64 = u32::MAX as u64;
/// `pos` of a slot that is not in the heap.
const NOT_QUEUED: u32 = u32::MAX;

/// A timer's permanent slot in the queue ([`EventQueue::new_timer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerId(u32);

#[inline]
fn key(time: SimTime, seq: u64, slot: u32) -> u128 {
    ((time.ns() as u128) << 64) | ((seq as u128) << 32) | slot as u128
}

/// In a key's slot bits: the entry is a timer's, whose slot stays its own when it pops (tested
/// on the key the pop has in hand, where a per-slot flag cost a load).
const TIMER: u32 = 1 << 31;

#[inline]
fn slot_of(k: u128) -> usize {
    (k as u32 & !TIMER) as usize
}

#[inline]
fn is_timer(k: u128) -> bool {
    k as u32 & TIMER != 0
}

#[inline]
fn time_of(k: u128) -> SimTime {
    SimTime((k >> 64) as u64)
}

pub struct EventQueue {
    /// The 4-ary heap: the children of entry `i` are `4i + 1 ..= 4i + 4`.
    heap: Vec<u128>,
    /// The event of each slot.
    events: Vec<Event>,
    /// Where each slot's entry is in `heap` (`NOT_QUEUED` when it is not).
    pos: Vec<u32>,
    /// Slots of popped one-off events, reused last-in first-out.
    free: Vec<u32>,
    /// Whether `heap[0]` is the entry last popped, not a pending one (see the module's doc).
    hole: bool,
    next_seq: u64,
    seq_max: u64,
    /// The event held by [`EventQueue::schedule_next`], with its key (slot 0).
    next: Option<(u128, Event)>,
    now: SimTime,
    executed: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue::new()
    }
}

impl EventQueue {
    pub fn new() -> Self {
        EventQueue {
            heap: Vec::with_capacity(1024),
            events: Vec::with_capacity(1024),
            pos: Vec::with_capacity(1024),
            free: Vec::with_capacity(1024),
            hole: false,
            next_seq: 0,
            seq_max: SEQ_MAX,
            next: None,
            now: SimTime::ZERO,
            executed: 0,
        }
    }

    /// The time of the event being executed (or of the last one).
    #[inline]
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Events popped so far.
    pub fn executed(&self) -> u64 {
        self.executed
    }

    /// Events pending (armed timers included).
    pub fn len(&self) -> usize {
        self.heap.len() - self.hole as usize + self.next.is_some() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Refills the root's hole, if there is one, with the last entry.
    #[inline]
    fn fill(&mut self) {
        if self.hole {
            self.hole = false;
            let last = self.heap.pop().expect("the hole is in the heap");
            if !self.heap.is_empty() {
                self.sift_down(0, last);
            }
        }
    }

    #[inline]
    fn take_seq(&mut self) -> u64 {
        if self.next_seq > self.seq_max {
            self.renumber();
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// Gives the pending entries the sequence numbers `0..len` in their order, and continues
    /// from `len`: every comparison between entries, pending or future, comes out as before.
    #[cold]
    fn renumber(&mut self) {
        self.flush_next();
        self.fill();
        self.heap.sort_unstable();
        for (i, k) in self.heap.iter_mut().enumerate() {
            let bits = *k as u32;
            *k = key(time_of(*k), i as u64, bits);
            self.pos[slot_of(*k)] = i as u32;
        }
        // A sorted array is a heap.
        self.next_seq = self.heap.len() as u64;
        assert!(
            self.next_seq <= self.seq_max,
            "more pending events than sequence numbers"
        );
    }

    /// Always inline: the Python module's LTO left it out of line (5.5 % of a 108-node run's
    /// samples) where the example binary's inlines it into `schedule`.
    #[inline(always)]
    fn alloc_slot(&mut self, event: Event) -> u32 {
        match self.free.pop() {
            Some(s) => {
                self.events[s as usize] = event;
                s
            }
            None => {
                let s = self.events.len();
                assert!(s < TIMER as usize, "too many pending events");
                self.events.push(event);
                self.pos.push(NOT_QUEUED);
                s as u32
            }
        }
    }

    /// Schedules `event` at absolute time `at` (never in the past).
    #[inline]
    pub fn schedule(&mut self, at: SimTime, event: Event) {
        debug_assert!(at >= self.now, "event scheduled in the past");
        let seq = self.take_seq();
        let slot = self.alloc_slot(event);
        self.push(key(at.max(self.now), seq, slot));
    }

    /// Schedules `event` at `at` like [`EventQueue::schedule`], but holds it out of the heap
    /// until [`EventQueue::take_next`] (which the event loop calls when the handler returns).
    /// One event is held at a time: a second `schedule_next` puts the first in the heap. For an
    /// event that is likely to be the next one due; any other costs a branch more than
    /// `schedule`.
    #[inline]
    pub fn schedule_next(&mut self, at: SimTime, event: Event) {
        debug_assert!(at >= self.now, "event scheduled in the past");
        self.flush_next();
        let seq = self.take_seq();
        self.next = Some((key(at.max(self.now), seq, 0), event));
    }

    /// The event held by [`EventQueue::schedule_next`], to run now, if it is due at or before
    /// `until`, `run_now` allows it, and its key is below every pending key (the heap would pop
    /// it next); the clock then moves to it and it counts as executed. Otherwise it goes into the
    /// heap under the key it was given, and `None`.
    #[inline]
    pub fn take_next(&mut self, until: SimTime, run_now: bool) -> Option<Event> {
        let (k, event) = self.next.take()?;
        if run_now && time_of(k) <= until && self.below_pending(k) {
            self.now = time_of(k);
            self.executed += 1;
            return Some(event);
        }
        self.push_held(k, event);
        None
    }

    /// Puts a held event in the heap under its key `k` (slot bits 0), in a slot of its own.
    #[inline]
    fn push_held(&mut self, k: u128, event: Event) {
        let slot = self.alloc_slot(event);
        self.push(k | slot as u128);
    }

    /// Puts the event held by [`EventQueue::schedule_next`], if any, in the heap (the event loop
    /// does this before its first pop, in case an event was held outside a handler).
    #[inline]
    pub fn flush_next(&mut self) {
        if self.next.is_some() {
            self.flush_held();
        }
    }

    #[cold]
    #[inline(never)]
    fn flush_held(&mut self) {
        if let Some((k, event)) = self.next.take() {
            self.push_held(k, event);
        }
    }

    /// Whether `k` is below every pending key (`k`'s slot bits are 0 and never decide: sequence
    /// numbers are unique).
    #[inline]
    fn below_pending(&self, k: u128) -> bool {
        // Asked at every held event: testing each child with an early exit costs less than
        // `least_pending` (taking the least of four first: +0.5 % of mesh-7x7's instructions,
        // +0.8 % of TCP-SACK's).
        if self.hole {
            let n = self.heap.len();
            self.heap[1.min(n)..n.min(5)].iter().all(|&c| k < c)
        } else {
            self.heap.first().is_none_or(|&c| k < c)
        }
    }

    /// The least key in the heap (the held event aside): the root, or while the root is the
    /// popped entry left as a hole, the least of its children.
    #[inline]
    fn least_pending(&self) -> Option<u128> {
        if self.hole {
            let n = self.heap.len();
            self.heap[1.min(n)..n.min(5)].iter().copied().min()
        } else {
            self.heap.first().copied()
        }
    }

    /// Schedules `event` after `delay` from now.
    #[inline]
    pub fn schedule_in(&mut self, delay: SimTime, event: Event) {
        self.schedule(self.now + delay, event)
    }

    /// A new timer, not armed. Its slot stays its own for the rest of the run.
    pub fn new_timer(&mut self) -> TimerId {
        // The placeholder event is replaced when the timer is armed.
        TimerId(self.alloc_slot(Event::BackpressureTick))
    }

    /// Arms `timer` to deliver `event` at `at`, replacing its pending firing if it has one. It
    /// takes the next sequence number, as [`EventQueue::schedule`] would: among equal-time
    /// events it runs where a newly scheduled event would.
    #[inline]
    pub fn set_timer(&mut self, timer: TimerId, at: SimTime, event: Event) {
        debug_assert!(at >= self.now, "timer set in the past");
        let seq = self.take_seq();
        let slot = timer.0;
        self.events[slot as usize] = event;
        let k = key(at.max(self.now), seq, slot | TIMER);
        match self.pos[slot as usize] {
            NOT_QUEUED => self.push(k),
            p => {
                let p = p as usize;
                if k < self.heap[p] {
                    self.sift_up(p, k);
                } else {
                    self.sift_down(p, k);
                }
            }
        }
    }

    /// Disarms `timer`: its pending firing, if any, leaves the queue.
    #[inline]
    pub fn cancel_timer(&mut self, timer: TimerId) {
        let slot = timer.0 as usize;
        let p = self.pos[slot];
        if p == NOT_QUEUED {
            return;
        }
        self.pos[slot] = NOT_QUEUED;
        let last = self.heap.pop().expect("a queued timer is in the heap");
        let p = p as usize;
        if p < self.heap.len() {
            let removed = self.heap[p];
            if last < removed {
                self.sift_up(p, last);
            } else {
                self.sift_down(p, last);
            }
        }
    }

    /// Whether `timer` has a pending firing.
    pub fn timer_armed(&self, timer: TimerId) -> bool {
        self.pos[timer.0 as usize] != NOT_QUEUED
    }

    /// The pending events (armed timers included) with their times, in no particular order.
    pub fn pending(&self) -> impl Iterator<Item = (SimTime, Event)> + '_ {
        let skip = self.hole as usize;
        self.heap[skip.min(self.heap.len())..]
            .iter()
            .map(|&k| (time_of(k), self.events[slot_of(k)]))
            .chain(self.next.map(|(k, event)| (time_of(k), event)))
    }

    /// Time of the next event, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<SimTime> {
        let next = self.next.map(|(k, _)| time_of(k));
        let heap = self.least_pending().map(time_of);
        match (heap, next) {
            (Some(h), Some(n)) => Some(h.min(n)),
            (h, n) => h.or(n),
        }
    }

    /// Pops the next event if it is due at or before `until`, advancing the clock to it.
    #[inline]
    pub fn pop_until(&mut self, until: SimTime) -> Option<Event> {
        self.fill();
        let &top = self.heap.first()?;
        let time = time_of(top);
        if time > until {
            return None;
        }
        let slot = slot_of(top);
        self.hole = true;
        self.pos[slot] = NOT_QUEUED;
        if !is_timer(top) {
            self.free.push(slot as u32);
        }
        self.now = time;
        self.executed += 1;
        Some(self.events[slot])
    }

    /// The event the next pop gives unless an earlier one is scheduled first (a held event is
    /// not counted): what the world's loop prefetches for while the event just popped runs,
    /// which may schedule an earlier one.
    #[inline]
    pub fn following(&self) -> Option<Event> {
        Some(self.events[slot_of(self.least_pending()?)])
    }

    /// Moves the clock forward to `t` when no event is left before it.
    pub fn advance_to(&mut self, t: SimTime) {
        if t > self.now {
            self.now = t;
        }
    }

    #[inline]
    fn push(&mut self, k: u128) {
        if self.hole {
            self.hole = false;
            self.sift_down(0, k);
            return;
        }
        let hole = self.heap.len();
        self.heap.push(k);
        self.sift_up(hole, k);
    }

    /// Puts `k` at `hole` or above it, moving larger parents down.
    #[inline]
    fn sift_up(&mut self, mut hole: usize, k: u128) {
        while hole > 0 {
            let parent = (hole - 1) / 4;
            let pk = self.heap[parent];
            if pk < k {
                break;
            }
            self.heap[hole] = pk;
            self.place(pk, hole);
            hole = parent;
        }
        self.heap[hole] = k;
        self.place(k, hole);
    }

    /// Records where entry `k` now is (only timers' places are ever read, but writing every
    /// entry's costs less than the unpredictable branch that would skip the others: on
    /// mesh-7x7 the branch saved 1.5 % of the instructions for 14 % more mispredicted branches).
    #[inline(always)]
    fn place(&mut self, k: u128, at: usize) {
        let slot = slot_of(k);
        debug_assert!(slot < self.pos.len());
        // SAFETY: every key in the heap names a slot `alloc_slot` made, and `pos` grows with
        // `events` and never shrinks (a held key's slot bits, 0, are replaced by its own slot
        // in `push_held` before it enters the heap). Checked in debug builds.
        unsafe { *self.pos.get_unchecked_mut(slot) = at as u32 };
    }

    /// Puts `k` at `hole` or below it, moving smaller children up.
    #[inline]
    fn sift_down(&mut self, mut hole: usize, k: u128) {
        let n = self.heap.len();
        debug_assert!(hole < n);
        // Every caller passes a `hole` below `n`: `fill` and `push` the root of a heap that is
        // not empty (a hole is an entry), `set_timer` a position it has just read the entry
        // of, `cancel_timer` one it tested against the length. The loop then moves `hole` to a
        // child it read below `n`. So the four children's read and the writes at `hole` leave
        // out the slices' bounds checks (1.9 % of mesh-7x7's instructions and 1.2 % of
        // DPCLO's, cachegrind); debug builds, and so the tests, assert them. The branch for
        // fewer than four children, rare, keeps its checks.
        loop {
            let first = 4 * hole + 1;
            let (best, bk) = if first + 3 < n {
                // All four children: a tournament, without a loop's bounds checks, its winners
                // picked by index arithmetic rather than branches (which the keys' order makes
                // unpredictable). SAFETY: first + 3 < n = heap.len().
                let c: &[u128; 4] =
                    unsafe { &*(self.heap.as_ptr().add(first) as *const [u128; 4]) };
                let a = (c[1] < c[0]) as usize;
                let b = 2 + (c[3] < c[2]) as usize;
                let w = if c[b] < c[a] { b } else { a };
                (first + w, c[w])
            } else if first < n {
                let mut best = first;
                let mut bk = self.heap[first];
                for c in first + 1..n {
                    if self.heap[c] < bk {
                        best = c;
                        bk = self.heap[c];
                    }
                }
                (best, bk)
            } else {
                break;
            };
            if k < bk {
                break;
            }
            debug_assert!(hole < n);
            // SAFETY: hole < n (the caller's, then a child's index below n).
            unsafe { *self.heap.get_unchecked_mut(hole) = bk };
            self.place(bk, hole);
            hole = best;
        }
        debug_assert!(hole < n);
        // SAFETY: as above.
        unsafe { *self.heap.get_unchecked_mut(hole) = k };
        self.place(k, hole);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    #[test]
    fn equal_time_events_run_in_scheduling_order() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(10), Event::AppSend { flow: 2 });
        q.schedule(SimTime(5), Event::AppSend { flow: 0 });
        q.schedule(SimTime(10), Event::AppSend { flow: 3 });
        q.schedule(SimTime(5), Event::AppSend { flow: 1 });
        let mut order = vec![];
        while let Some(Event::AppSend { flow }) = q.pop_until(SimTime::MAX) {
            order.push(flow);
        }
        assert_eq!(order, vec![0, 1, 2, 3]);
        assert_eq!(q.now(), SimTime(10));
        assert_eq!(q.executed(), 4);
    }

    #[test]
    fn the_next_time_is_known_between_a_pop_and_the_next_push() {
        // A pop leaves a hole at the root: peek_time must still give the next pending time.
        let mut q = EventQueue::new();
        for (t, flow) in [(30, 0), (10, 1), (20, 2), (40, 3), (50, 4), (60, 5)] {
            q.schedule(SimTime(t), Event::AppSend { flow });
        }
        let mut seen = vec![];
        while let Some(Event::AppSend { flow }) = q.pop_until(SimTime::MAX) {
            seen.push((q.now().ns(), flow, q.peek_time().map(|t| t.ns()), q.len()));
            if flow == 1 {
                // A push into the hole, earlier than every pending event.
                q.schedule(SimTime(15), Event::AppSend { flow: 9 });
                assert_eq!(q.peek_time(), Some(SimTime(15)));
            }
        }
        assert_eq!(
            seen,
            vec![
                (10, 1, Some(20), 5),
                (15, 9, Some(20), 5),
                (20, 2, Some(30), 4),
                (30, 0, Some(40), 3),
                (40, 3, Some(50), 2),
                (50, 4, Some(60), 1),
                (60, 5, None, 0),
            ]
        );
        assert!(q.is_empty());
    }

    #[test]
    fn pop_until_leaves_later_events() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(100), Event::FlowStart { flow: 0 });
        assert!(q.pop_until(SimTime(99)).is_none());
        assert!(q.pop_until(SimTime(100)).is_some());
    }

    #[test]
    fn a_rearmed_timer_runs_where_a_new_event_would_and_a_cancelled_one_never() {
        let mut q = EventQueue::new();
        let t = q.new_timer();
        q.set_timer(t, SimTime(10), Event::AppSend { flow: 9 });
        q.schedule(SimTime(10), Event::AppSend { flow: 0 });
        // Re-armed at the same instant: now behind flow 0, as a fresh event would be.
        q.set_timer(t, SimTime(10), Event::AppSend { flow: 1 });
        q.schedule(SimTime(10), Event::AppSend { flow: 2 });
        let u = q.new_timer();
        q.set_timer(u, SimTime(5), Event::AppSend { flow: 7 });
        q.cancel_timer(u);
        assert!(!q.timer_armed(u));
        let mut order = vec![];
        while let Some(Event::AppSend { flow }) = q.pop_until(SimTime::MAX) {
            order.push(flow);
        }
        assert_eq!(order, vec![0, 1, 2]);
        assert!(!q.timer_armed(t));
    }

    /// The reference: a binary heap of `(time, seq)` with lazily cancelled timers, the queue
    /// this one replaced. Random schedules, timer re-arms and cancels, and pops must give the
    /// same sequence of live events, equal times included. With `with_next`, some events are
    /// held by `schedule_next` and each pop first asks `take_next`, as the world's event loop
    /// does when a handler returns.
    fn against_reference(seed: u64, seq_max: u64, with_next: bool) {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut q = EventQueue::new();
        q.seq_max = seq_max;
        let mut reference: BinaryHeap<Reverse<(u64, u64, u32, u64)>> = BinaryHeap::new();
        let mut ref_seq = 0u64;
        const TIMERS: usize = 8;
        // Timers are created on first use, in the middle of the run: their slots may be ones
        // that popped events freed.
        let mut timers: Vec<Option<TimerId>> = vec![None; TIMERS];
        // The reference's current generation of each timer (a firing is live if it matches).
        let mut generation = [0u64; TIMERS];
        let mut live = [false; TIMERS];
        let mut popped = 0;
        // Whether the current "handler" holds an event; events that ran at once, and that went
        // into the heap instead.
        let mut held = false;
        let (mut ran_at_once, mut flushed) = (0u32, 0u32);
        for step in 0..20_000u32 {
            let now = q.now().ns();
            // Small time offsets: many equal times.
            let at = now + rng.gen_range(0..4u64);
            // With held events, more pops: a short queue, where a held event often comes first.
            let op = match rng.gen_range(0..10) {
                1 | 2 if with_next => 9,
                op => op,
            };
            match op {
                0..=2 => {
                    q.schedule(SimTime(at), Event::AppSend { flow: step });
                    reference.push(Reverse((at, ref_seq, step, u64::MAX)));
                    ref_seq += 1;
                }
                3..=4 => {
                    let t = rng.gen_range(0..TIMERS);
                    generation[t] += 1;
                    live[t] = true;
                    let id = *timers[t].get_or_insert_with(|| q.new_timer());
                    q.set_timer(id, SimTime(at), Event::AppSend { flow: step });
                    reference.push(Reverse((
                        at,
                        ref_seq,
                        step,
                        (t as u64) << 32 | generation[t],
                    )));
                    ref_seq += 1;
                }
                5 => {
                    let t = rng.gen_range(0..TIMERS);
                    generation[t] += 1;
                    live[t] = false;
                    if let Some(id) = timers[t] {
                        q.cancel_timer(id);
                    }
                }
                6 if with_next => {
                    // A second held event puts the first in the heap.
                    held = true;
                    q.schedule_next(SimTime(at), Event::AppSend { flow: step });
                    reference.push(Reverse((at, ref_seq, step, u64::MAX)));
                    ref_seq += 1;
                }
                _ => {
                    let until = now + rng.gen_range(0..3u64);
                    // The reference pops stale timers silently.
                    let expected = loop {
                        match reference.peek() {
                            Some(&Reverse((t, _, flow, tag))) if t <= until => {
                                reference.pop();
                                if tag == u64::MAX {
                                    break Some((t, flow));
                                }
                                let (timer, g) = ((tag >> 32) as usize, tag & 0xffff_ffff);
                                if g == generation[timer] && live[timer] {
                                    live[timer] = false;
                                    break Some((t, flow));
                                }
                            }
                            _ => break None,
                        }
                    };
                    // As the world's loop: the held event runs at once or joins the heap, and
                    // then the queue pops (with optimizers, `run_now` is false).
                    let run_now = rng.gen_range(0..8) != 0;
                    let next = q.take_next(SimTime(until), run_now);
                    if held {
                        ran_at_once += next.is_some() as u32;
                        flushed += next.is_none() as u32;
                    }
                    held = false;
                    let flow_of = |e: Event| match e {
                        Event::AppSend { flow } => flow,
                        _ => unreachable!(),
                    };
                    // What the loop prefetches for is what the pop then gives.
                    let following = q.following().map(flow_of);
                    let got = next
                        .or_else(|| {
                            let e = q.pop_until(SimTime(until));
                            if let Some(e) = e {
                                assert_eq!(Some(flow_of(e)), following, "seed {seed}, step {step}");
                            }
                            e
                        })
                        .map(|e| (q.now().ns(), flow_of(e)));
                    assert_eq!(got, expected, "seed {seed}, step {step}");
                    popped += got.is_some() as u32;
                    for (t, id) in timers.iter().enumerate() {
                        assert_eq!(id.is_some_and(|id| q.timer_armed(id)), live[t]);
                    }
                }
            }
        }
        assert!(popped > 1000);
        if with_next {
            assert!(
                ran_at_once > 100 && flushed > 100,
                "{ran_at_once} {flushed}"
            );
        }
        q.take_next(SimTime::MAX, false);
        // Drain both.
        loop {
            let following = q.following();
            let Some(e) = q.pop_until(SimTime::MAX) else {
                assert!(following.is_none());
                break;
            };
            let Event::AppSend { flow } = e else {
                unreachable!()
            };
            assert!(matches!(following, Some(Event::AppSend { flow: f }) if f == flow));
            let expected = loop {
                let Reverse((t, _, flow, tag)) = reference.pop().expect("reference not empty");
                if tag == u64::MAX {
                    break (t, flow);
                }
                let (timer, g) = ((tag >> 32) as usize, tag & 0xffff_ffff);
                if g == generation[timer] && live[timer] {
                    live[timer] = false;
                    break (t, flow);
                }
            };
            assert_eq!((q.now().ns(), flow), expected);
        }
        assert!(reference
            .iter()
            .all(|Reverse((_, _, _, tag))| *tag != u64::MAX));
    }

    #[test]
    fn pops_in_the_order_of_a_binary_heap_with_lazily_cancelled_timers() {
        for seed in 0..8 {
            against_reference(seed, SEQ_MAX, false);
        }
    }

    #[test]
    fn renumbering_the_sequence_keeps_the_order() {
        // Sequence numbers run out every few hundred schedules.
        for seed in 0..4 {
            against_reference(seed, 300, false);
        }
    }

    #[test]
    fn an_event_held_by_schedule_next_runs_where_schedule_would_have_put_it() {
        for seed in 0..8 {
            against_reference(seed, SEQ_MAX, true);
        }
        // Renumbering while an event is held.
        for seed in 0..4 {
            against_reference(seed, 300, true);
        }
    }

    #[test]
    fn a_held_event_runs_at_once_only_when_nothing_pending_comes_first() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(10), Event::AppSend { flow: 0 });
        q.schedule(SimTime(20), Event::AppSend { flow: 1 });
        assert!(matches!(
            q.pop_until(SimTime::MAX),
            Some(Event::AppSend { flow: 0 })
        ));
        // Due before the pending event at 20: it runs at once, and the clock moves to it.
        q.schedule_next(SimTime(15), Event::AppSend { flow: 2 });
        assert!(matches!(
            q.take_next(SimTime::MAX, true),
            Some(Event::AppSend { flow: 2 })
        ));
        assert_eq!(q.now(), SimTime(15));
        assert_eq!(q.executed(), 2);
        // Due with the pending one: that one was scheduled first, so it goes first.
        q.schedule_next(SimTime(20), Event::AppSend { flow: 3 });
        assert_eq!(q.len(), 2);
        assert!(q.take_next(SimTime::MAX, true).is_none());
        assert_eq!(q.len(), 2);
        assert!(matches!(
            q.pop_until(SimTime::MAX),
            Some(Event::AppSend { flow: 1 })
        ));
        // Beyond `until`, or not allowed to run now: it waits in the heap.
        q.schedule_next(SimTime(25), Event::AppSend { flow: 4 });
        assert!(q.take_next(SimTime(24), true).is_none());
        assert_eq!(q.now(), SimTime(20));
        assert!(matches!(
            q.pop_until(SimTime::MAX),
            Some(Event::AppSend { flow: 3 })
        ));
        q.schedule_next(SimTime(26), Event::AppSend { flow: 5 });
        assert!(q.take_next(SimTime::MAX, false).is_none());
        assert!(matches!(
            q.pop_until(SimTime::MAX),
            Some(Event::AppSend { flow: 4 })
        ));
        assert!(matches!(
            q.pop_until(SimTime::MAX),
            Some(Event::AppSend { flow: 5 })
        ));
        assert!(q.pop_until(SimTime::MAX).is_none());
        // With an empty queue it always runs at once.
        q.schedule_next(SimTime(30), Event::AppSend { flow: 6 });
        assert!(matches!(
            q.take_next(SimTime::MAX, true),
            Some(Event::AppSend { flow: 6 })
        ));
        assert_eq!(q.executed(), 7);
    }
}
