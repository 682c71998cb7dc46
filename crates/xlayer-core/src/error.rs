//! Errors of the core. Configuration problems are `Err` values naming the field; a broken
//! internal invariant is a panic (`debug_assert!` on hot paths), which the binding turns into a
//! `SimulationError` rather than a crash.

use thiserror::Error;

#[derive(Debug, Clone, Error, PartialEq)]
pub enum XlError {
    /// A scenario field is malformed or out of range.
    #[error("{field}: {message}")]
    Scenario { field: String, message: String },
    /// The topology cannot carry what the scenario asks (e.g. an unreachable destination).
    #[error("{field}: {message}")]
    Topology { field: String, message: String },
    /// A tuning-layer get/set named an unknown parameter or an out-of-range value.
    #[error("{0}")]
    Tuning(String),
    /// The run itself failed.
    #[error("{0}")]
    Simulation(String),
}

impl XlError {
    pub fn scenario(field: impl Into<String>, message: impl Into<String>) -> Self {
        XlError::Scenario {
            field: field.into(),
            message: message.into(),
        }
    }
    pub fn topology(field: impl Into<String>, message: impl Into<String>) -> Self {
        XlError::Topology {
            field: field.into(),
            message: message.into(),
        }
    }
}
