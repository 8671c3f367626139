//! `spot_timer.Owner`: one authority of an owner (a Spot). Registers timers on the calling
//! thread: arguments are checked and converted here, the handler is kept in the runtime's
//! object table, and the core registers the timer without a scheduler round trip.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyString, PyTuple};
use pyo3::PyTraverseError;

use spot_timer_core::{Error, OverrunPolicy, Owner, TimerSpec};

use crate::durations::{nanos, opt_nanos};
use crate::errors::{fail, to_py, Exc};
use crate::inner::{Inner, SLICE};
use crate::keys::AUTO_KEY_BASE;
use crate::timer::{KeyKind, NativeTimer};

const I32_MAX: u64 = i32::MAX as u64;

#[pyclass(module = "spot_timer", name = "Owner", frozen, weakref)]
pub struct NativeOwner {
    inner: Arc<Inner>,
    /// The Python `Runtime` this authority was acquired from.
    runtime: Py<PyAny>,
    owner: Owner<u64>,
    /// The lease given at acquisition (`renew()` without an argument renews by it).
    lease_ns: Option<u64>,
}

impl NativeOwner {
    pub fn new(
        inner: Arc<Inner>,
        runtime: Py<PyAny>,
        owner: Owner<u64>,
        lease_ns: Option<u64>,
    ) -> Self {
        Self {
            inner,
            runtime,
            owner,
            lease_ns,
        }
    }

    fn check_open(&self, py: Python<'_>) -> PyResult<()> {
        if self.inner.is_closed() {
            return fail(py, Exc::RuntimeClosed, "runtime is closed");
        }
        Ok(())
    }

    /// The key id the core uses, and how a `Timer` reports its key.
    fn key_id(&self, py: Python<'_>, key: Option<&Bound<'_, PyAny>>) -> PyResult<(u64, KeyKind)> {
        let Some(key) = key.filter(|k| !k.is_none()) else {
            return Ok((self.inner.keys.fresh(), KeyKind::Id));
        };
        if key.is_instance_of::<PyInt>() && !key.is_instance_of::<PyBool>() {
            if let Ok(v) = key.extract::<u64>() {
                if v < AUTO_KEY_BASE {
                    let kind = if key.is_exact_instance_of::<PyInt>() {
                        KeyKind::Id
                    } else {
                        KeyKind::Mapped
                    };
                    if matches!(kind, KeyKind::Mapped) {
                        self.inner.keys.name(py, self.owner.id(), v, key)?;
                    }
                    return Ok((v, kind));
                }
            }
        }
        // Any other hashable: mapped to an id per owner id.
        let id = self.inner.keys.id_of(py, self.owner.id(), key)?;
        let kind = if is_immutable_value(key) {
            KeyKind::Value(key.clone().unbind())
        } else {
            KeyKind::Mapped
        };
        Ok((id, kind))
    }

    #[allow(clippy::too_many_arguments)]
    fn register<'py>(
        &self,
        py: Python<'py>,
        spec: TimerSpec,
        handler: &Bound<'_, PyAny>,
        key: Option<&Bound<'_, PyAny>>,
        on_release: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, NativeTimer>> {
        check_callable(py, handler, "handler")?;
        let on_release = on_release.filter(|r| !r.is_none());
        if let Some(r) = on_release {
            check_callable(py, r, "on_release")?;
        }
        let given_key = key.filter(|k| !k.is_none());
        let (key, key_kind) = self.key_id(py, key)?;
        let inner = &self.inner;
        inner.purge(py);
        let handler = handler.clone().unbind();
        // What `Tick.key` gives back: the key as given, unless it is the plain int id.
        let tick_key = match &key_kind {
            KeyKind::Id => None,
            KeyKind::Value(k) => Some(k.clone_ref(py)),
            KeyKind::Mapped => given_key.map(|k| k.clone().unbind()),
        };
        let pid = inner.objects.with(py, |o| {
            let pid = o.insert(handler);
            if let Some(k) = tick_key {
                o.set_key(pid, k);
            }
            pid
        });
        if let Some(r) = on_release {
            inner.releases.insert(pid, r.clone().unbind());
        }
        match self.owner.register_held(key, spec, pid, None) {
            Ok(held) => {
                let id = held.into_id();
                let timer = NativeTimer::new(
                    inner.clone(),
                    id,
                    key,
                    key_kind,
                    self.owner.id(),
                    pid,
                    on_release.is_some(),
                );
                let obj = Bound::new(py, timer)?;
                // A timer refers to no Python object that could lead back to it (see
                // `NativeTimer`), so the collector need not trace it: a million live
                // timers then cost a collection nothing.
                // SAFETY: `obj` is a live object of a GC type; untracking is always allowed
                // and its deallocation untracks idempotently.
                unsafe { pyo3::ffi::PyObject_GC_UnTrack(obj.as_ptr().cast()) };
                Ok(obj)
            }
            Err(e) => {
                let taken = inner.objects.with(py, |o| o.remove(pid));
                let release = inner.releases.remove(pid);
                drop((taken, release));
                Err(to_py(py, e))
            }
        }
    }
}

/// True for keys that cannot lead back to a timer (a timer keeps these itself).
fn is_immutable_value(key: &Bound<'_, PyAny>) -> bool {
    if key.is_exact_instance_of::<PyString>()
        || key.is_exact_instance_of::<PyBytes>()
        || key.is_exact_instance_of::<PyInt>()
        || key.is_exact_instance_of::<PyFloat>()
        || key.is_exact_instance_of::<PyBool>()
    {
        return true;
    }
    match key.cast_exact::<PyTuple>() {
        Ok(t) => t.len() <= 8 && t.iter().all(|item| is_immutable_value(&item)),
        Err(_) => false,
    }
}

pub fn check_callable(py: Python<'_>, obj: &Bound<'_, PyAny>, name: &str) -> PyResult<()> {
    if obj.is_callable() {
        return Ok(());
    }
    let ty = obj.get_type().name()?;
    fail(
        py,
        Exc::HandlerNotCallable,
        format!("{name} must be callable, got {ty}"),
    )
}

fn policy_code(py: Python<'_>, policy: Option<&Bound<'_, PyAny>>) -> PyResult<u32> {
    let Some(p) = policy.filter(|p| !p.is_none()) else {
        return Ok(OverrunPolicy::SkipLateTicks as u32);
    };
    if p.is_instance_of::<PyInt>() && !p.is_instance_of::<PyBool>() {
        if let Ok(code @ 0..=2) = p.extract::<u32>() {
            return Ok(code);
        }
    }
    fail(
        py,
        Exc::ArgumentType,
        format!("policy must be an OverrunPolicy, not {}", p.repr()?),
    )
}

#[pymethods]
impl NativeOwner {
    #[getter]
    fn id(&self) -> u64 {
        self.owner.id()
    }

    #[getter]
    fn epoch(&self) -> u64 {
        self.owner.epoch()
    }

    #[getter]
    fn runtime(&self, py: Python<'_>) -> Py<PyAny> {
        self.runtime.clone_ref(py)
    }

    /// True while this authority is current and its lease has not run out.
    fn is_valid(&self, py: Python<'_>) -> PyResult<bool> {
        match self.owner.check() {
            Ok(()) => Ok(true),
            Err(Error::LeaseExpired) | Err(Error::Revoked) => Ok(false),
            Err(e) => Err(to_py(py, e)),
        }
    }

    /// Extends the lease to now + `lease` (default: the lease given at acquisition).
    #[pyo3(signature = (lease=None))]
    fn renew(&self, py: Python<'_>, lease: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.check_open(py)?;
        let lease_ns = match opt_nanos(py, lease, "lease")? {
            None => self.lease_ns,
            Some(ns) => Some(ns),
        };
        if lease_ns == Some(0) {
            return fail(py, Exc::InvalidDuration, "lease must be greater than zero");
        }
        self.owner
            .renew(lease_ns.map(Duration::from_nanos))
            .map_err(|e| to_py(py, e))
    }

    /// Ends this authority: its timers end with `EndReason.REVOKED` and never run again.
    fn revoke(&self, py: Python<'_>) -> PyResult<()> {
        self.check_open(py)?;
        self.owner.revoke().map_err(|e| to_py(py, e))
    }

    /// Like `revoke()`, and the runtime forgets the owner once its timers have ended.
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        let this = self;
        this.check_open(py)?;
        // The key maps go first: a registration racing the release under this authority
        // fails with it, and an authority acquired after maps its keys afresh.
        this.inner.keys.forget_owner(py, this.owner.id());
        this.owner.release().map_err(|e| to_py(py, e))
    }

    #[pyo3(
        signature = (period, handler, *, key=None, policy=None, max_catch_up_ticks=None, first_due=None, on_release=None),
        text_signature = "($self, period, handler, *, key=None, policy=0, max_catch_up_ticks=1, first_due=None, on_release=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn every<'py>(
        &self,
        py: Python<'py>,
        period: &Bound<'_, PyAny>,
        handler: &Bound<'_, PyAny>,
        key: Option<&Bound<'_, PyAny>>,
        policy: Option<&Bound<'_, PyAny>>,
        max_catch_up_ticks: Option<&Bound<'_, PyAny>>,
        first_due: Option<&Bound<'_, PyAny>>,
        on_release: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, NativeTimer>> {
        self.check_open(py)?;
        let period_ns = nanos(py, period, "period")?;
        if period_ns == 0 {
            return fail(py, Exc::InvalidDuration, "period must be greater than zero");
        }
        let first_ns = opt_nanos(py, first_due, "first_due")?;
        let policy = policy_code(py, policy)?;
        let mct = match max_catch_up_ticks {
            None => 1,
            Some(m) if m.is_instance_of::<PyInt>() && !m.is_instance_of::<PyBool>() => {
                m.extract::<i128>().unwrap_or(i128::MAX)
            }
            Some(m) => {
                let ty = m.get_type().name()?;
                return fail(
                    py,
                    Exc::ArgumentType,
                    format!("max_catch_up_ticks must be an int, not {ty}"),
                );
            }
        };
        let policy = OverrunPolicy::from_u32(policy).unwrap_or(OverrunPolicy::SkipLateTicks);
        let mct = if policy == OverrunPolicy::CatchUpBounded {
            if !(1..=i128::from(I32_MAX as u32)).contains(&mct) {
                return fail(
                    py,
                    Exc::InvalidArgument,
                    format!(
                        "max_catch_up_ticks must be in 1..={I32_MAX} with CATCH_UP_BOUNDED, got {}",
                        max_catch_up_ticks
                            .map_or(Ok("1".to_string()), |m| m.str().map(|s| s.to_string()))?
                    ),
                );
            }
            mct as u64
        } else {
            1
        };
        let mut spec = TimerSpec::every(Duration::from_nanos(period_ns))
            .policy(policy)
            .max_catch_up_ticks(mct);
        if let Some(d) = first_ns {
            spec = spec.first_due(Duration::from_nanos(d));
        }
        self.register(py, spec, handler, key, on_release)
    }

    #[pyo3(signature = (delay, handler, *, key=None, on_release=None))]
    fn after<'py>(
        &self,
        py: Python<'py>,
        delay: &Bound<'_, PyAny>,
        handler: &Bound<'_, PyAny>,
        key: Option<&Bound<'_, PyAny>>,
        on_release: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, NativeTimer>> {
        self.check_open(py)?;
        let delay_ns = nanos(py, delay, "delay")?;
        let spec = TimerSpec::after(Duration::from_nanos(delay_ns));
        self.register(py, spec, handler, key, on_release)
    }

    /// Takes the owner's execution gate (T9), waiting up to `timeout` (None: forever).
    /// False on timeout.
    #[pyo3(signature = (timeout=None))]
    fn enter_gate(&self, py: Python<'_>, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        let timeout_ns = opt_nanos(py, timeout, "timeout")?;
        let deadline = timeout_ns.map(|t| Instant::now() + Duration::from_nanos(t));
        loop {
            let slice = match deadline {
                None => SLICE,
                Some(d) => d.saturating_duration_since(Instant::now()).min(SLICE),
            };
            let owner = &self.owner;
            if py.detach(|| owner.enter_gate(Some(slice))) {
                return Ok(true);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(false);
            }
            py.check_signals()?;
        }
    }

    fn leave_gate(&self, py: Python<'_>) -> PyResult<()> {
        self.owner.leave_gate().map_err(|e| to_py(py, e))
    }

    fn __repr__(&self) -> String {
        format!(
            "<spot_timer.Owner id={} epoch={}>",
            self.owner.id(),
            self.owner.epoch()
        )
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.runtime)
    }
}
