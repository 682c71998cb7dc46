//! Python optimizers: a Python object driven through the core's `Optimizer` trait, and the
//! context object its callbacks receive. Conversion only; the contract is in
//! `xlayer_core::tune::optimizer` and the Python class interface in `xlayer.optimizers`.
//!
//! A callback receives an `OptimizerContext` that is valid only during the call (it points at
//! the core's context on the stack); using it afterwards raises `TuningError`. An exception
//! raised by the Python code becomes the optimizer's failure (type, message and traceback): the
//! core unloads it and records it, the run goes on. A `KeyboardInterrupt` (Ctrl-C) is not a
//! failure: it is re-armed so that it stops the run when control returns to Python.

use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::errors::{to_py, TuningError};
use xlayer_core::sim::SimTime;
use xlayer_core::tune::optimizer::{Ctx, Optimizer};
use xlayer_core::tune::TuneEvent;

/// The node's tuning layers, as seen by a Python optimizer during one callback.
#[pyclass(module = "xlayer._core", unsendable)]
pub struct OptimizerContext {
    ctx: *mut Ctx<'static>,
}

impl OptimizerContext {
    fn ctx(&mut self) -> PyResult<&mut Ctx<'static>> {
        if self.ctx.is_null() {
            return Err(TuningError::new_err(
                "this optimizer context is only valid during the callback it was passed to",
            ));
        }
        // SAFETY: the pointer is set for the duration of one callback, during which the core's
        // `Ctx` outlives this object's use; it is nulled before the callback returns.
        let ctx = unsafe { &mut *self.ctx };
        // Every use of the context is a call from Python into the core: a crossing.
        ctx.count_crossing();
        Ok(ctx)
    }
}

#[pymethods]
impl OptimizerContext {
    /// The node the optimizer is attached to.
    #[getter]
    fn node(&mut self) -> PyResult<u32> {
        Ok(self.ctx()?.node())
    }

    /// Simulated time now (s).
    fn now_s(&mut self) -> PyResult<f64> {
        Ok(self.ctx()?.now().as_secs_f64())
    }

    /// Reads a parameter of the node (``"mac.queue_len.0"``, ``"tcp.rwnd.2"``...).
    fn get(&mut self, name: &str) -> PyResult<f64> {
        self.ctx()?.get(name).map_err(to_py)
    }

    /// Sets a parameter of the node through its tuning layer.
    fn set(&mut self, name: &str, value: f64) -> PyResult<()> {
        self.ctx()?.set(name, value).map_err(to_py)
    }

    /// Registers for events of ``kind`` on this node.
    fn subscribe(&mut self, kind: &str) -> PyResult<()> {
        self.ctx()?.subscribe_name(kind).map_err(to_py)
    }

    /// Unregisters from events of ``kind``.
    fn unsubscribe(&mut self, kind: &str) -> PyResult<()> {
        let k = xlayer_core::tune::TuneEventKind::from_name(kind)
            .ok_or_else(|| to_py(xlayer_core::tune::optimizer::unknown_kind(kind)))?;
        self.ctx()?.unsubscribe(k);
        Ok(())
    }

    /// Calls ``on_timer(ctx, tag)`` after ``delay_s`` seconds of simulated time.
    #[pyo3(signature = (delay_s, tag=0))]
    fn schedule(&mut self, delay_s: f64, tag: u32) -> PyResult<()> {
        if !(delay_s.is_finite() && delay_s >= 0.0) {
            return Err(TuningError::new_err(format!(
                "schedule: delay_s must be a time >= 0, found {delay_s}"
            )));
        }
        self.ctx()?
            .schedule(SimTime::from_secs_f64(delay_s), tag)
            .map_err(to_py)
    }

    /// The flows of the network: ``(flow, src, dst)`` tuples (to find the node's connections).
    fn flows(&mut self) -> PyResult<Vec<(u32, u32, u32)>> {
        Ok(self
            .ctx()?
            .flows()
            .iter()
            .map(|f| (f.id, f.src, f.dst))
            .collect())
    }
}

/// A Python object with `start(ctx)`, `on_events(ctx, events)` and `on_timer(ctx, tag)`.
pub struct PyOptimizer {
    pub obj: PyObject,
}

fn describe(py: Python<'_>, e: PyErr) -> String {
    let tb = e
        .traceback_bound(py)
        .and_then(|t| t.format().ok())
        .unwrap_or_default();
    format!("{e}\n{tb}").trim_end().to_string()
}

impl PyOptimizer {
    fn invoke(
        &mut self,
        ctx: &mut Ctx<'_>,
        f: impl FnOnce(Python<'_>, &PyObject, Bound<'_, OptimizerContext>) -> PyResult<PyObject>,
    ) -> Result<(), String> {
        Python::with_gil(|py| {
            // Erases the borrow's lifetime; the handle's pointer is nulled before `ctx` is released.
            let ptr: *mut Ctx<'static> = std::ptr::from_mut(ctx).cast();
            let handle =
                Bound::new(py, OptimizerContext { ctx: ptr }).map_err(|e| describe(py, e))?;
            let r = f(py, &self.obj, handle.clone());
            handle.borrow_mut().ctx = std::ptr::null_mut();
            match r {
                Ok(_) => Ok(()),
                // Ctrl-C while Python code ran: not the optimizer's failure. Re-arm the
                // interrupt so that it stops the run once control is back in Python.
                Err(e) if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) => {
                    // SAFETY: called with the GIL held.
                    unsafe { pyo3::ffi::PyErr_SetInterrupt() };
                    Ok(())
                }
                Err(e) => Err(describe(py, e)),
            }
        })
    }
}

impl Optimizer for PyOptimizer {
    fn start(&mut self, ctx: &mut Ctx<'_>) -> Result<(), String> {
        self.invoke(ctx, |py, obj, c| obj.call_method1(py, "start", (c,)))
    }

    fn on_events(&mut self, ctx: &mut Ctx<'_>, events: &[TuneEvent]) -> Result<(), String> {
        self.invoke(ctx, |py, obj, c| {
            let items: Vec<PyObject> = events
                .iter()
                .map(|e| {
                    let t: (f64, u32, &str, f64, Option<u32>) =
                        (e.time.as_secs_f64(), e.node, e.kind.name(), e.value, e.flow);
                    t.into_py(py)
                })
                .collect();
            let list = PyList::new_bound(py, items);
            obj.call_method1(py, "on_events", (c, list))
        })
    }

    fn on_timer(&mut self, ctx: &mut Ctx<'_>, tag: u32) -> Result<(), String> {
        self.invoke(ctx, |py, obj, c| obj.call_method1(py, "on_timer", (c, tag)))
    }
}
