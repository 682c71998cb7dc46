//! PyO3 bindings of xlayer-core: conversion and error mapping only, no simulation logic.
//! The module is `xlayer._core`; the Python package re-exports what users need.

// PyO3 0.22's #[pyfunction]/#[pymethods] expansion converts a PyResult's error into PyErr,
// which clippy flags in the user's code (fixed in PyO3 0.23).
#![allow(clippy::useless_conversion)]

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

mod errors;
mod optimizers;

use errors::{to_py, SimulationError, TuningError};
use xlayer_core::sim::SimTime;
use xlayer_core::{Results, Scenario, Value, XlError};

fn value_to_py(py: Python<'_>, v: &Value) -> PyObject {
    match v {
        Value::Int(i) => i.into_py(py),
        Value::Float(f) => f.into_py(py),
        Value::Str(s) => s.into_py(py),
    }
}

fn row_to_dict<'py>(
    py: Python<'py>,
    row: &[(&'static str, Value)],
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new_bound(py);
    for (k, v) in row {
        d.set_item(*k, value_to_py(py, v))?;
    }
    Ok(d)
}

fn results_to_py(py: Python<'_>, r: &Results) -> PyResult<PyObject> {
    let d = PyDict::new_bound(py);
    d.set_item("summary", row_to_dict(py, &r.summary)?)?;
    let tables: [(&str, &[xlayer_core::Row]); 7] = [
        ("flows", &r.flows),
        ("nodes", &r.nodes),
        ("timeseries", &r.timeseries),
        ("tcp_trace", &r.tcp_trace),
        ("optimizers", &r.optimizers),
        ("conflicts", &r.conflicts),
        ("core", &r.core),
    ];
    for (name, rows) in tables {
        d.set_item(name, table_to_py(py, rows)?)?;
    }
    Ok(d.into_py(py))
}

/// A table by column, so that a long table (a fine time series) costs no Python object per row
/// or per number: `{column: (kind, data)}` in the order columns first appear, where kind
/// "i8" and "f8" carry little-endian int64 / float64 bytes (a row without the column is NaN, and
/// makes an integer column "f8") and "obj" a list (str, int or float; None where missing).
fn table_to_py<'py>(py: Python<'py>, rows: &[xlayer_core::Row]) -> PyResult<Bound<'py, PyDict>> {
    let mut names: Vec<&'static str> = Vec::new();
    for row in rows {
        for (k, _) in row {
            if !names.contains(k) {
                names.push(k);
            }
        }
    }
    let d = PyDict::new_bound(py);
    for name in names {
        let cells: Vec<Option<&Value>> = rows
            .iter()
            .map(|r| r.iter().find(|(k, _)| *k == name).map(|(_, v)| v))
            .collect();
        let numeric = cells
            .iter()
            .all(|c| matches!(c, None | Some(Value::Int(_) | Value::Float(_))));
        let ints = cells.iter().all(|c| matches!(c, Some(Value::Int(_))));
        let column = if ints {
            let mut bytes = Vec::with_capacity(cells.len() * 8);
            for c in &cells {
                if let Some(Value::Int(i)) = c {
                    bytes.extend_from_slice(&i.to_le_bytes());
                }
            }
            ("i8", PyBytes::new_bound(py, &bytes).into_py(py))
        } else if numeric {
            let mut bytes = Vec::with_capacity(cells.len() * 8);
            for c in &cells {
                let v = match c {
                    Some(Value::Int(i)) => *i as f64,
                    Some(Value::Float(f)) => *f,
                    _ => f64::NAN,
                };
                bytes.extend_from_slice(&v.to_le_bytes());
            }
            ("f8", PyBytes::new_bound(py, &bytes).into_py(py))
        } else {
            let list = PyList::empty_bound(py);
            for c in &cells {
                list.append(c.map_or_else(|| py.None(), |v| value_to_py(py, v)))?;
            }
            ("obj", list.into_py(py))
        };
        d.set_item(name, column)?;
    }
    Ok(d)
}

/// Runs `f`, turning a Rust panic into a `SimulationError` instead of a crash.
fn guarded<T>(f: impl FnOnce() -> Result<T, XlError> + std::panic::UnwindSafe) -> PyResult<T> {
    match std::panic::catch_unwind(f) {
        Ok(r) => r.map_err(to_py),
        Err(e) => {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(SimulationError::new_err(format!(
                "internal error in the simulator (please report it): {msg}"
            )))
        }
    }
}

/// Validates a scenario given as JSON text; returns the normalized scenario as JSON text.
#[pyfunction]
fn normalize_scenario(json_text: &str) -> PyResult<String> {
    let text = json_text.to_owned();
    guarded(move || Scenario::from_json(&text).map(|s| s.to_json()))
}

/// Validates a scenario given as JSON text; returns the normalized scenario as TOML text.
#[pyfunction]
fn scenario_to_toml(json_text: &str) -> PyResult<String> {
    let text = json_text.to_owned();
    guarded(move || Scenario::from_json(&text).map(|s| s.to_toml()))
}

/// The optimum oracle's model of a scenario (JSON text), `xlayer_core::oracle`: a dict with
/// `nodes`, `packet_bytes`, `links` (dict of columns `from, to, rate_bps, rx_dbm, success`,
/// `backoff_s`, and per packet size lists `attempt_s`, `capacity_pps`), `conflicts` (pairs of
/// link indices)
/// and `flows` (dicts `flow, src, dst, payload_bits, size, route, window_s`).
#[pyfunction]
fn oracle_model(py: Python<'_>, json_text: &str) -> PyResult<PyObject> {
    let text = json_text.to_owned();
    let m = guarded(move || xlayer_core::oracle::model(&Scenario::from_json(&text)?))?;
    let links = PyDict::new_bound(py);
    links.set_item("from", m.links.iter().map(|l| l.from).collect::<Vec<_>>())?;
    links.set_item("to", m.links.iter().map(|l| l.to).collect::<Vec<_>>())?;
    links.set_item(
        "rate_bps",
        m.links.iter().map(|l| l.rate_bps).collect::<Vec<_>>(),
    )?;
    links.set_item(
        "rx_dbm",
        m.links.iter().map(|l| l.rx_dbm).collect::<Vec<_>>(),
    )?;
    links.set_item(
        "success",
        m.links.iter().map(|l| l.success).collect::<Vec<_>>(),
    )?;
    links.set_item(
        "attempt_s",
        m.links
            .iter()
            .map(|l| l.attempt_s.clone())
            .collect::<Vec<_>>(),
    )?;
    links.set_item(
        "backoff_s",
        m.links.iter().map(|l| l.backoff_s).collect::<Vec<_>>(),
    )?;
    links.set_item(
        "capacity_pps",
        m.links
            .iter()
            .map(|l| l.capacity_pps.clone())
            .collect::<Vec<_>>(),
    )?;
    let flows = PyList::empty_bound(py);
    for f in &m.flows {
        let d = PyDict::new_bound(py);
        d.set_item("flow", f.id)?;
        d.set_item("src", f.src)?;
        d.set_item("dst", f.dst)?;
        d.set_item("payload_bits", f.payload_bits)?;
        d.set_item("size", f.size)?;
        d.set_item("route", f.route.clone())?;
        d.set_item("window_s", f.window_s)?;
        flows.append(d)?;
    }
    let d = PyDict::new_bound(py);
    d.set_item("nodes", m.nodes)?;
    d.set_item("packet_bytes", m.packet_bytes)?;
    d.set_item("links", links)?;
    d.set_item("conflicts", m.conflicts)?;
    d.set_item("flows", flows)?;
    Ok(d.into_py(py))
}

/// The TCP connections of a capture (pcap or pcapng bytes) and the passive flavor detector's
/// verdict on each (`xlayer_core::transport::flavor_capture`): a list of dicts with `src`,
/// `sport`, `dst`, `dport`, `packets`, `flavor`, `sack`, `confidence`, and the details
/// `data_bytes`, `fast_recoveries`, `timeouts`, `decided_s` (None before a decision), `first_s`,
/// `last_s`. A capture that cannot be read raises `PcapError`; the GIL is released meanwhile.
#[pyfunction]
fn capture_flavors(py: Python<'_>, data: &[u8]) -> PyResult<PyObject> {
    let bytes = data.to_vec();
    let r = py.allow_threads(move || {
        std::panic::catch_unwind(move || {
            xlayer_core::transport::flavor_capture::detect_flavors(&bytes)
        })
    });
    let caps = match r {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return Err(errors::pcap_to_py(e)),
        Err(e) => {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            return Err(errors::PcapError::new_err(format!(
                "internal error reading the capture (please report it): {msg}"
            )));
        }
    };
    let out = PyList::empty_bound(py);
    for c in &caps.connections {
        let d = PyDict::new_bound(py);
        d.set_item("src", c.src.to_string())?;
        d.set_item("sport", c.sport)?;
        d.set_item("dst", c.dst.to_string())?;
        d.set_item("dport", c.dport)?;
        d.set_item("packets", c.packets)?;
        d.set_item("flavor", c.detection.flavor.name())?;
        d.set_item("sack", c.detection.sack)?;
        d.set_item("confidence", c.detection.confidence)?;
        d.set_item("data_bytes", c.data_bytes)?;
        d.set_item("fast_recoveries", c.detection.fast_recoveries)?;
        d.set_item("timeouts", c.detection.timeouts)?;
        d.set_item("decided_s", c.detection.decided_at.map(|t| t.as_secs_f64()))?;
        d.set_item("first_s", c.first_s)?;
        d.set_item("last_s", c.last_s)?;
        out.append(d)?;
    }
    Ok(out.into_py(py))
}

/// A built scenario. Build it from JSON text, advance it with `run_until`, read `results()`.
#[pyclass(module = "xlayer._core", unsendable)]
struct Simulation {
    inner: xlayer_core::Simulation,
    /// The capture files `open_pcaps` created, by node.
    pcap_paths: Vec<(u32, std::path::PathBuf)>,
}

/// `EMFILE`, too many open files (Linux, macOS and the BSDs alike).
const EMFILE: i32 = 24;

/// An `OSError` for `e` on `path`: "`what`: reason`hint`", with the errno when there is one
/// (so Python picks the subclass, e.g. `FileNotFoundError`).
fn os_error(e: &std::io::Error, what: &str, hint: &str, path: &std::path::Path) -> PyErr {
    let reason = e.to_string();
    // io::Error appends " (os error N)" to the system's text; Python shows the errno itself.
    let reason = match reason.rfind(" (os error ") {
        Some(i) => reason[..i].to_string(),
        None => reason,
    };
    let msg = format!("{what}: {reason}{hint}");
    let file = path.display().to_string();
    match e.raw_os_error() {
        Some(code) => PyOSError::new_err((code, msg, file)),
        None => PyOSError::new_err(format!("{msg}: '{file}'")),
    }
}

impl Simulation {
    fn capture_result(
        &self,
        r: Result<(), xlayer_core::metrics::pcap::CaptureError>,
    ) -> PyResult<()> {
        r.map_err(|e| {
            let path = self
                .pcap_paths
                .iter()
                .find(|(n, _)| *n == e.node)
                .map(|(_, p)| p.clone())
                .unwrap_or_else(|| format!("node{}.pcap", e.node).into());
            os_error(
                &e.error,
                &format!("cannot write the pcap capture of node {}", e.node),
                "",
                &path,
            )
        })
    }
}

#[pymethods]
impl Simulation {
    #[new]
    fn new(json_text: &str) -> PyResult<Self> {
        let text = json_text.to_owned();
        let inner = guarded(move || xlayer_core::Simulation::from_json(&text))?;
        Ok(Simulation {
            inner,
            pcap_paths: Vec::new(),
        })
    }

    #[getter]
    fn end_s(&self) -> f64 {
        self.inner.end_s()
    }

    fn now_s(&self) -> f64 {
        self.inner.now_s()
    }

    fn events(&self) -> u64 {
        self.inner.events()
    }

    /// Advances to `t_s` seconds (capped at the end) with the GIL released; True at the end.
    /// A capture that could not be written raises `OSError` (the run itself went on).
    fn run_until(&mut self, py: Python<'_>, t_s: f64) -> PyResult<bool> {
        if t_s.is_nan() {
            return Err(SimulationError::new_err("run_until: time is NaN"));
        }
        let sim = &mut self.inner;
        let res = py.allow_threads(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sim.run_until(t_s)))
        });
        let done = res.map_err(|e| {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            SimulationError::new_err(format!(
                "internal error in the simulator (please report it): {msg}"
            ))
        })?;
        if self.inner.capture_failed() {
            let r = self.inner.flush_captures();
            self.capture_result(r)?;
        }
        Ok(done)
    }

    fn results(&self, py: Python<'_>) -> PyResult<PyObject> {
        results_to_py(py, &self.inner.results())
    }

    /// The nodes the scenario captures (`output.pcap`, `output.pcap_nodes`), ascending.
    fn pcap_nodes(&self) -> Vec<u32> {
        self.inner.captured_nodes()
    }

    /// Creates `folder/node<N>.pcap` for every captured node and streams each node's capture
    /// into its file (buffered) from the start of the run; returns the nodes. A file that
    /// cannot be created raises `OSError` naming it.
    fn open_pcaps(&mut self, folder: std::path::PathBuf) -> PyResult<Vec<u32>> {
        let nodes = self.inner.captured_nodes();
        for &node in &nodes {
            let path = folder.join(format!("node{node}.pcap"));
            let file = std::fs::File::create(&path).map_err(|e| {
                let hint = if e.raw_os_error() == Some(EMFILE) {
                    "; capture fewer nodes (output.pcap_nodes) or raise the open-file limit \
                     (ulimit -n)"
                } else {
                    ""
                };
                os_error(
                    &e,
                    &format!("cannot create the pcap capture of node {node}"),
                    hint,
                    &path,
                )
            })?;
            self.inner
                .attach_capture(node, Box::new(file))
                .map_err(to_py)?;
            self.pcap_paths.push((node, path));
        }
        Ok(nodes)
    }

    /// Writes out what the captures have buffered; raises `OSError` for the first capture that
    /// could not be written (a full disk, a folder removed).
    fn flush_pcaps(&mut self) -> PyResult<()> {
        let r = self.inner.flush_captures();
        self.capture_result(r)
    }

    /// Flushes and closes the capture files (nothing is captured afterwards); raises like
    /// `flush_pcaps`.
    fn close_pcaps(&mut self) -> PyResult<()> {
        let r = self.inner.close_captures();
        self.capture_result(r)
    }

    /// The tuning parameters every node exposes.
    fn params(&self, py: Python<'_>) -> PyResult<PyObject> {
        let out = PyList::empty_bound(py);
        for s in xlayer_core::tune::all_params() {
            out.append(param_dict(py, s)?)?;
        }
        Ok(out.into_py(py))
    }

    fn get_param(&mut self, node: u32, name: &str) -> PyResult<f64> {
        xlayer_core::tune::get(&mut self.inner.world, node, name).map_err(to_py)
    }

    fn set_param(&mut self, node: u32, name: &str, value: f64) -> PyResult<()> {
        xlayer_core::tune::set(&mut self.inner.world, node, name, value).map_err(to_py)
    }

    /// Starts buffering events of `kind` (e.g. "mac.tx_outcome", "net.queue_overflow").
    fn subscribe(&mut self, kind: &str) -> PyResult<()> {
        let k = xlayer_core::tune::TuneEventKind::from_name(kind).ok_or_else(|| {
            let names: Vec<&str> = xlayer_core::tune::TuneEventKind::ALL
                .iter()
                .map(|k| k.name())
                .collect();
            TuningError::new_err(format!("unknown event kind \"{kind}\"; known: {names:?}"))
        })?;
        self.inner.world.events.subscribe(k);
        Ok(())
    }

    /// Events published since the last call, as (time_s, node, kind, value, flow) tuples
    /// (`flow` is None for events that concern no flow).
    #[allow(clippy::type_complexity)]
    fn take_events(&mut self) -> Vec<(f64, u32, &'static str, f64, Option<u32>)> {
        self.inner
            .world
            .events
            .drain()
            .into_iter()
            .map(|e| (e.time.as_secs_f64(), e.node, e.kind.name(), e.value, e.flow))
            .collect()
    }

    /// Number of nodes.
    fn node_count(&self) -> usize {
        self.inner.world.nodes.len()
    }

    /// The scenario's `[[optimizers]]` entries with `python = ...`, as JSON text (a list), for
    /// the Python API to load and attach.
    fn python_optimizers(&self) -> String {
        serde_json::to_string(&self.inner.world.python_optimizers).unwrap_or_default()
    }

    /// Attaches a Python optimizer object to `node` (its `start(ctx)` runs now).
    #[pyo3(signature = (node, obj, name, latency_s=0.0, conflict_window_s=1.0, delivery="off_path"))]
    fn attach_python(
        &mut self,
        node: u32,
        obj: PyObject,
        name: String,
        latency_s: f64,
        conflict_window_s: f64,
        delivery: &str,
    ) -> PyResult<usize> {
        use xlayer_core::tune::optimizer::{attach, AttachOptions, Delivery};
        for (field, v) in [
            ("latency_s", latency_s),
            ("conflict_window_s", conflict_window_s),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(TuningError::new_err(format!(
                    "{field}: must be a time >= 0, found {v}"
                )));
            }
        }
        let mut o = AttachOptions::new(name);
        o.language = "python";
        o.latency = SimTime::from_secs_f64(latency_s);
        o.conflict_window = SimTime::from_secs_f64(conflict_window_s);
        o.delivery = match delivery {
            "off_path" => Delivery::OffPath,
            "per_packet" => Delivery::PerPacket,
            other => {
                return Err(TuningError::new_err(format!(
                    "delivery: unknown \"{other}\"; allowed: \"off_path\", \"per_packet\""
                )))
            }
        };
        let world = &mut self.inner.world;
        guarded(std::panic::AssertUnwindSafe(move || {
            attach(world, node, Box::new(optimizers::PyOptimizer { obj }), o)
        }))
    }
}

/// One tuning parameter as a dict: `name` (with `.<level>`, `.<neighbour>`, `.<destination>` or
/// `.<flow>` where it takes an index),
/// `layer, doc, unit, min, max, read_only`.
fn param_dict<'py>(
    py: Python<'py>,
    s: &xlayer_core::tune::ParamSpec,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new_bound(py);
    let name = if s.per_level || s.per_flow {
        format!("{}.<{}>", s.name, s.index)
    } else {
        s.name.to_string()
    };
    d.set_item("name", name)?;
    d.set_item("layer", s.layer)?;
    d.set_item("doc", s.doc)?;
    d.set_item("unit", s.unit)?;
    d.set_item("min", s.min)?;
    d.set_item("max", s.max)?;
    d.set_item("read_only", s.read_only)?;
    Ok(d)
}

/// Every tuning parameter and event of every layer: dicts with `kind` ("param" or "event"),
/// `name, layer, doc, unit`, and for parameters `min, max, read_only, settable`.
#[pyfunction]
fn tunables(py: Python<'_>) -> PyResult<PyObject> {
    let out = PyList::empty_bound(py);
    for s in xlayer_core::tune::all_params() {
        let d = param_dict(py, s)?;
        d.set_item("kind", "param")?;
        d.set_item("type", "float")?;
        d.set_item("settable", !s.read_only)?;
        out.append(d)?;
    }
    for k in xlayer_core::tune::TuneEventKind::ALL {
        let xlayer_core::tune::EventSpec {
            layer, doc, unit, ..
        } = *xlayer_core::tune::event_spec(k);
        let d = PyDict::new_bound(py);
        d.set_item("kind", "event")?;
        d.set_item("name", k.name())?;
        d.set_item("layer", layer)?;
        d.set_item("type", "float")?;
        d.set_item("unit", unit)?;
        d.set_item("read_only", true)?;
        d.set_item("settable", false)?;
        d.set_item("doc", doc)?;
        out.append(d)?;
    }
    Ok(out.into_py(py))
}

/// The protocol stacks `stack.preset` accepts.
#[pyfunction]
fn presets() -> Vec<&'static str> {
    xlayer_core::scenario::PRESETS.to_vec()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add("__version__", xlayer_core::VERSION)?;
    m.add_function(wrap_pyfunction!(normalize_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_to_toml, m)?)?;
    m.add_function(wrap_pyfunction!(oracle_model, m)?)?;
    m.add_function(wrap_pyfunction!(capture_flavors, m)?)?;
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(tunables, m)?)?;
    m.add_class::<optimizers::OptimizerContext>()?;
    errors::register(m)?;
    Ok(())
}
