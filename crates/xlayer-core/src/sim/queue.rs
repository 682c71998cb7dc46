//! The future event list: a binary heap ordered by `(time, sequence)`.
//!
//! The sequence number makes equal-time events first-in first-out, so a run is reproducible
//! whatever the heap's internal order (SimPy and ns-3 order their schedulers the same way).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::{Event, SimTime};

struct Entry {
    time: SimTime,
    seq: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap and we want the earliest (time, seq) on top.
    fn cmp(&self, o: &Self) -> Ordering {
        o.time.cmp(&self.time).then_with(|| o.seq.cmp(&self.seq))
    }
}

#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    next_seq: u64,
    now: SimTime,
    executed: u64,
}

impl EventQueue {
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(1024),
            next_seq: 0,
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

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Schedules `event` at absolute time `at` (never in the past).
    #[inline]
    pub fn schedule(&mut self, at: SimTime, event: Event) {
        debug_assert!(at >= self.now, "event scheduled in the past");
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry {
            time: at.max(self.now),
            seq,
            event,
        });
    }

    /// Schedules `event` after `delay` from now.
    #[inline]
    pub fn schedule_in(&mut self, delay: SimTime, event: Event) {
        self.schedule(self.now + delay, event)
    }

    /// Time of the next event, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| e.time)
    }

    /// Pops the next event if it is due at or before `until`, advancing the clock to it.
    #[inline]
    pub fn pop_until(&mut self, until: SimTime) -> Option<Event> {
        match self.heap.peek() {
            Some(e) if e.time <= until => {
                let e = self.heap.pop().expect("peeked");
                self.now = e.time;
                self.executed += 1;
                Some(e.event)
            }
            _ => None,
        }
    }

    /// Moves the clock forward to `t` when no event is left before it.
    pub fn advance_to(&mut self, t: SimTime) {
        if t > self.now {
            self.now = t;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn pop_until_leaves_later_events() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(100), Event::FlowStart { flow: 0 });
        assert!(q.pop_until(SimTime(99)).is_none());
        assert!(q.pop_until(SimTime(100)).is_some());
    }
}
