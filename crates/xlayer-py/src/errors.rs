//! The Python exception tree, one class per error variant of the core:
//! `XlayerError` → `ScenarioError`, `TopologyError`, `SimulationError`, `TuningError`,
//! `PcapError` (a capture `xlayer flavor` cannot read).
//! The classes live in `xlayer._core` (their `__module__`), so they pickle across processes
//! (Dask workers send them back to the client).

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use xlayer_core::XlError;

create_exception!(
    xlayer._core,
    XlayerError,
    PyException,
    "Base class of every xlayer error."
);
create_exception!(
    xlayer._core,
    ScenarioError,
    XlayerError,
    "A scenario field is malformed or out of range."
);
create_exception!(
    xlayer._core,
    TopologyError,
    XlayerError,
    "The topology cannot carry the scenario (e.g. an unreachable destination)."
);
create_exception!(
    xlayer._core,
    SimulationError,
    XlayerError,
    "The run itself failed."
);
create_exception!(
    xlayer._core,
    TuningError,
    XlayerError,
    "A tuning-layer parameter or value is not valid."
);

create_exception!(
    xlayer._core,
    PcapError,
    XlayerError,
    "A capture file is not a pcap or pcapng file, or is truncated or malformed."
);

/// A capture that cannot be read: its message names what is wrong and where.
pub fn pcap_to_py(e: xlayer_core::wire::pcap_read::PcapError) -> PyErr {
    PcapError::new_err(e.to_string())
}

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
    m.add("PcapError", py.get_type_bound::<PcapError>())?;
    Ok(())
}
