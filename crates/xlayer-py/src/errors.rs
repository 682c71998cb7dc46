//! The Python exception tree, one class per error variant of the core:
//! `XlayerError` → `ScenarioError`, `TopologyError`, `SimulationError`, `TuningError`.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use xlayer_core::XlError;

create_exception!(
    _core,
    XlayerError,
    PyException,
    "Base class of every xlayer error."
);
create_exception!(
    _core,
    ScenarioError,
    XlayerError,
    "A scenario field is malformed or out of range."
);
create_exception!(
    _core,
    TopologyError,
    XlayerError,
    "The topology cannot carry the scenario (e.g. an unreachable destination)."
);
create_exception!(
    _core,
    SimulationError,
    XlayerError,
    "The run itself failed."
);
create_exception!(
    _core,
    TuningError,
    XlayerError,
    "A tuning-layer parameter or value is not valid."
);

pub fn to_py(e: XlError) -> PyErr {
    let msg = e.to_string();
    match e {
        XlError::Scenario { .. } => ScenarioError::new_err(msg),
        XlError::Topology { .. } => TopologyError::new_err(msg),
        XlError::Tuning(_) => TuningError::new_err(msg),
        XlError::Simulation(_) => SimulationError::new_err(msg),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("XlayerError", py.get_type_bound::<XlayerError>())?;
    m.add("ScenarioError", py.get_type_bound::<ScenarioError>())?;
    m.add("TopologyError", py.get_type_bound::<TopologyError>())?;
    m.add("SimulationError", py.get_type_bound::<SimulationError>())?;
    m.add("TuningError", py.get_type_bound::<TuningError>())?;
    Ok(())
}
