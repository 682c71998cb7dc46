//! The engine: simulated time, the event queue and the named random streams.
//!
//! Depends on nothing else in the crate. Time is an integer count of nanoseconds ([`SimTime`]);
//! events are a plain enum ([`Event`]) ordered by `(time, sequence)` so equal-time events run in
//! the order they were scheduled; a timer with its own queue slot ([`TimerId`]) is moved when
//! re-armed and removed when cancelled, other timers are cancelled lazily by generation counters
//! held by their owners. Randomness comes only from [`rng::stream`], keyed by `(seed, node, name)`.

pub mod event;
pub mod memory;
pub mod param;
pub mod queue;
pub mod rng;
pub mod time;

pub use event::{Event, TimerKind};
pub use queue::{EventQueue, TimerId};
pub use time::SimTime;
