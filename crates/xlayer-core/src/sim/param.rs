//! Declarations of tunable parameters (ECLAIR's tuning layers; ns-3's attributes): each layer
//! declares its parameters once, next to its code, in a `tuning.rs` holding a `PARAMS` table of
//! [`ParamSpec`]s and the functions that read and set them; `crate::tune` gathers the tables
//! into its registry. This module only names the declaration's shape, so every layer can use it.

/// Declaration of one tunable parameter.
#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    /// Name; per-level parameters take a `.<level>` suffix.
    pub name: &'static str,
    pub layer: &'static str,
    pub doc: &'static str,
    pub unit: &'static str,
    pub min: f64,
    pub max: f64,
    pub per_level: bool,
    pub read_only: bool,
    /// Addressed per flow (`<name>.<flow>`), on the node that runs the flow's endpoint.
    pub per_flow: bool,
}

#[allow(clippy::too_many_arguments)] // one row of the parameter table, read as such
pub const fn p(
    name: &'static str,
    layer: &'static str,
    doc: &'static str,
    unit: &'static str,
    min: f64,
    max: f64,
    per_level: bool,
    read_only: bool,
) -> ParamSpec {
    ParamSpec {
        name,
        layer,
        doc,
        unit,
        min,
        max,
        per_level,
        read_only,
        per_flow: false,
    }
}

/// A parameter of one node (no index suffix).
pub const fn node_param(
    name: &'static str,
    layer: &'static str,
    doc: &'static str,
    unit: &'static str,
    min: f64,
    max: f64,
    read_only: bool,
) -> ParamSpec {
    p(name, layer, doc, unit, min, max, false, read_only)
}

/// A parameter of one flow, addressed as `<name>.<flow>` on the node that runs the flow's
/// endpoint.
pub const fn flow_param(
    name: &'static str,
    layer: &'static str,
    doc: &'static str,
    unit: &'static str,
    min: f64,
    max: f64,
    read_only: bool,
) -> ParamSpec {
    ParamSpec {
        per_flow: true,
        ..p(name, layer, doc, unit, min, max, false, read_only)
    }
}
