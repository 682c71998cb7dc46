//! Helpers the scenario's sections share: the error constructor `bad`, the range checks
//! every section uses (`positive`, `probability`, `at_least_1us`, `node_exists`), the
//! serde default `yes`, and the `default_from_serde!` macro that gives a table's `Default` from
//! its serde defaults. Nothing here is public outside `scenario`.

use crate::error::XlError;

/// `Default` for tables whose every field has a serde default: the value of an empty table, so
/// the `#[serde(default = ...)]` functions are the one source of each default.
macro_rules! default_from_serde {
    ($($t:ty),* $(,)?) => {
        $(impl Default for $t {
            fn default() -> Self {
                serde_json::from_str("{}").expect(concat!("defaults of ", stringify!($t)))
            }
        })*
    };
}
pub(super) use default_from_serde;

/// Serde default of the flags that are on unless turned off.
pub(super) fn yes() -> bool {
    true
}

pub(super) fn bad(field: impl Into<String>, msg: impl Into<String>) -> XlError {
    XlError::scenario(field, msg)
}

pub(super) fn positive(field: &str, v: f64) -> Result<(), XlError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(bad(field, format!("must be a positive number, found {v}")))
    }
}

/// A period the engine schedules repeatedly: at least 1 µs (shorter ones round to nothing in the
/// engine's nanoseconds, or flood the event queue).
pub(super) fn at_least_1us(field: &str, v: f64) -> Result<(), XlError> {
    if v.is_finite() && v >= 1e-6 {
        Ok(())
    } else {
        Err(bad(field, format!("must be at least 1e-6 s, found {v}")))
    }
}

pub(super) fn probability(field: &str, v: f64) -> Result<(), XlError> {
    if v.is_finite() && (0.0..1.0).contains(&v) {
        Ok(())
    } else {
        Err(bad(
            field,
            format!("must be a probability in [0, 1), found {v}"),
        ))
    }
}

pub(super) fn node_exists(field: &str, v: u32, n: u32) -> Result<(), XlError> {
    if v < n {
        Ok(())
    } else {
        Err(bad(
            field,
            format!(
                "node {v} does not exist (the topology has nodes 0..{})",
                n.saturating_sub(1)
            ),
        ))
    }
}
