//! The exception tree of `spot_timer`, made by the native module at import: everything it
//! raises derives from `SpotTimerError`, and each error of the core and of the Spot
//! lifecycle has one class ([`Exc`]). The package re-exports them; `_native.pyi` declares
//! them. Raised by variant, never by name.

use pyo3::exceptions::{
    PyException, PyLookupError, PyOSError, PyRuntimeError, PyTimeoutError, PyTypeError,
    PyValueError,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

/// One exception class of the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exc {
    SpotTimer,
    InvalidArgument,
    InvalidDuration,
    ArgumentType,
    HandlerNotCallable,
    UnknownOwner,
    LeaseExpired,
    Revoked,
    StaleHandle,
    ForeignTimer,
    InvalidCompletion,
    CancelTimeout,
    WouldDeadlock,
    CleanupFailed,
    RuntimeClosed,
    NotManualClock,
    CapacityExhausted,
    NativeOS,
    DispatchMode,
    NotFound,
    StaleRoute,
    CapacityExceeded,
    Unavailable,
    CreationFailed,
    WrongKind,
    InvalidKind,
    LocationStore,
    StoreKind,
    NodeClosed,
}

/// A builtin a class also derives from (so `except ValueError` catches it too).
#[derive(Clone, Copy)]
enum Builtin {
    Exception,
    Value,
    Type,
    Lookup,
    Timeout,
    Runtime,
    OS,
}

/// A class: its name, its base in the tree (None: the root), a builtin it also derives
/// from, its doc, and the attributes it carries (None until the raiser sets them).
struct Class {
    exc: Exc,
    name: &'static str,
    base: Option<Exc>,
    builtin: Option<Builtin>,
    doc: &'static str,
    attrs: &'static [&'static str],
}

const fn class(
    exc: Exc,
    name: &'static str,
    base: Option<Exc>,
    builtin: Option<Builtin>,
    doc: &'static str,
) -> Class {
    Class {
        exc,
        name,
        base,
        builtin,
        doc,
        attrs: &[],
    }
}

use Builtin as B;
use Exc as E;

/// Every class, each after its base.
const TREE: [Class; 29] = [
    class(E::SpotTimer, "SpotTimerError", None, Some(B::Exception), "Root of every exception raised by spot_timer."),
    class(E::InvalidArgument, "InvalidArgumentError", Some(E::SpotTimer), Some(B::Value), "An argument is outside its domain (zero period, max_catch_up_ticks out of range...)."),
    class(E::InvalidDuration, "InvalidDurationError", Some(E::InvalidArgument), None, "A duration is negative, NaN, infinite or too large."),
    class(E::ArgumentType, "ArgumentTypeError", Some(E::SpotTimer), Some(B::Type), "An argument has the wrong type."),
    class(E::HandlerNotCallable, "HandlerNotCallableError", Some(E::ArgumentType), None, "The handler (or release hook, or exception handler) is not callable."),
    class(E::UnknownOwner, "UnknownOwnerError", Some(E::SpotTimer), Some(B::Lookup), "No owner with this id was acquired on this runtime."),
    class(E::LeaseExpired, "LeaseExpiredError", Some(E::SpotTimer), None, "The owner's lease deadline passed; the authority is over and must be re-acquired."),
    class(E::Revoked, "RevokedError", Some(E::SpotTimer), None, "The owner authority was revoked or superseded by a newer one."),
    class(E::StaleHandle, "StaleHandleError", Some(E::SpotTimer), None, "The handle does not name a live or recorded timer generation of this runtime."),
    class(E::ForeignTimer, "ForeignTimerError", Some(E::StaleHandle), None, "The timer belongs to a different runtime."),
    class(E::InvalidCompletion, "InvalidCompletionError", Some(E::SpotTimer), None, "A completion token matched no record awaiting completion (internal)."),
    class(E::CancelTimeout, "CancelTimeoutError", Some(E::SpotTimer), Some(B::Timeout), "A blocking cancel ran out of time; the cancel itself goes on."),
    class(E::WouldDeadlock, "WouldDeadlockError", Some(E::SpotTimer), Some(B::Runtime), "The blocking wait would wait for the calling thread itself (cancel from inside the timer's own handler). The cancel has taken effect; use cancel_nowait()/cancel_async()."),
    class(E::CleanupFailed, "CleanupFailedError", Some(E::SpotTimer), None, "The timer's release hook failed: the generation's one terminal result."),
    class(E::RuntimeClosed, "RuntimeClosedError", Some(E::SpotTimer), None, "The runtime has been closed."),
    class(E::NotManualClock, "NotManualClockError", Some(E::SpotTimer), None, "advance() needs a runtime on a ManualClock."),
    class(E::CapacityExhausted, "CapacityExhaustedError", Some(E::SpotTimer), None, "The runtime's timer table is full."),
    class(E::NativeOS, "NativeOSError", Some(E::SpotTimer), Some(B::OS), "An operating-system call of the runtime failed."),
    class(E::DispatchMode, "DispatchModeError", Some(E::SpotTimer), None, "The call does not fit the runtime's delivery mode (e.g. dispatch() on a threaded runtime)."),
    Class { attrs: &["spot_id"], ..class(E::NotFound, "NotFoundError", Some(E::SpotTimer), Some(B::Lookup), "No Spot with this id exists (an ordinary send never creates one), or it is not active on this node. `spot_id`: the Spot addressed.") },
    Class { attrs: &["spot_id", "reason"], ..class(E::StaleRoute, "StaleRouteError", Some(E::SpotTimer), None, "The message reached a node that cannot run it (not the owner any more, its owner lease ran out, or the Spot is closing). It did not run and is not retried: the next call resolves the Spot again. `spot_id`: the Spot addressed; `reason`: what the receiving node found (a StaleReason).") },
    Class { attrs: &["queue"], ..class(E::CapacityExceeded, "CapacityExceededError", Some(E::SpotTimer), None, "A bounded queue refused the work; `queue` names which (a Queue: a Spot's application or lifecycle lane, the node's inbound bytes, or the node's active cap).") },
    Class { attrs: &["spot_id", "may_have_run"], ..class(E::Unavailable, "UnavailableError", Some(E::SpotTimer), None, "The Spot's owner cannot be used or reached now (its node is down with its lease not yet over, the store cannot be reached, or the answer was lost); no creation was started. `may_have_run`: False, it did not run anywhere and may be made again; True, its answer was lost on the way back.") },
    Class { attrs: &["spot_id", "message"], ..class(E::CreationFailed, "CreationFailedError", Some(E::SpotTimer), None, "The Spot's factory failed (raised); its reservation was released, so a later call may create it. `message` is the factory's error (\"TypeName: text\"); on the thread whose call ran the factory, `__cause__` is the exception it raised.") },
    Class { attrs: &["spot_id", "expected", "actual"], ..class(E::WrongKind, "WrongKindError", Some(E::SpotTimer), None, "The id names a Spot of another kind than the call is for (or the call is not allowed for its kind: the Entry Spot closes only with its node). `expected`: the kind the call is for; `actual`: the Spot's kind.") },
    class(E::InvalidKind, "InvalidKindError", Some(E::InvalidArgument), None, "A kind number that is not ENTRY (1), USER (2) or INSTANCE (3)."),
    class(E::LocationStore, "LocationStoreError", Some(E::SpotTimer), None, "The Location Store could not be used (also: etcd could not be reached when Store.etcd connected; the message names the endpoints)."),
    class(E::StoreKind, "StoreKindError", Some(E::SpotTimer), Some(B::Type), "The call needs the other kind of Location Store (Store.kind): e.g. expire_node or len() of an etcd store, whose leases and records live in etcd."),
    class(E::NodeClosed, "NodeClosedError", Some(E::RuntimeClosed), None, "The node has been shut down."),
];

static TYPES: PyOnceLock<Vec<Py<PyType>>> = PyOnceLock::new();

fn builtin<'py>(py: Python<'py>, b: Builtin) -> Bound<'py, PyType> {
    match b {
        B::Exception => py.get_type::<PyException>(),
        B::Value => py.get_type::<PyValueError>(),
        B::Type => py.get_type::<PyTypeError>(),
        B::Lookup => py.get_type::<PyLookupError>(),
        B::Timeout => py.get_type::<PyTimeoutError>(),
        B::Runtime => py.get_type::<PyRuntimeError>(),
        B::OS => py.get_type::<PyOSError>(),
    }
}

fn make(py: Python<'_>) -> PyResult<Vec<Py<PyType>>> {
    let mut made: Vec<Py<PyType>> = Vec::with_capacity(TREE.len());
    let meta = py.get_type::<PyType>();
    for (i, c) in TREE.iter().enumerate() {
        // The table is in the enum's order (a class is found by its variant's number), each
        // class after its base.
        let base = c.base.map(|b| b as usize);
        if c.exc as usize != i || base.is_some_and(|b| b >= i) {
            return Err(PyRuntimeError::new_err(format!(
                "spot_timer: the exception table is out of order at {}",
                c.name
            )));
        }
        let mut bases: Vec<Bound<'_, PyType>> = Vec::new();
        if let Some(b) = base {
            bases.push(made[b].bind(py).clone());
        }
        if let Some(b) = c.builtin {
            bases.push(builtin(py, b));
        }
        let ns = PyDict::new(py);
        ns.set_item("__doc__", c.doc)?;
        ns.set_item("__module__", "spot_timer")?;
        for a in c.attrs {
            ns.set_item(*a, py.None())?;
        }
        let ty = meta.call1((c.name, PyTuple::new(py, bases)?, ns))?;
        made.push(ty.cast_into::<PyType>()?.unbind());
    }
    Ok(made)
}

fn class_of(py: Python<'_>, exc: Exc) -> PyResult<&Bound<'_, PyType>> {
    let types = TYPES.get_or_try_init(py, || make(py))?;
    Ok(types[exc as usize].bind(py))
}

/// Adds every class to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    for c in &TREE {
        m.add(c.name, class_of(py, c.exc)?)?;
    }
    Ok(())
}

/// The class names, each after its base.
pub fn names() -> impl Iterator<Item = &'static str> {
    TREE.iter().map(|c| c.name)
}

/// The exception `exc` with `msg`.
pub fn new_err(py: Python<'_>, exc: Exc, msg: String) -> PyErr {
    new_err_with(py, exc, msg, &[])
}

/// The exception `exc` with `msg` and attributes (`("spot_id", value)`, ...).
pub fn new_err_with(
    py: Python<'_>,
    exc: Exc,
    msg: String,
    attrs: &[(&str, Bound<'_, PyAny>)],
) -> PyErr {
    let made = class_of(py, exc).and_then(|cls| {
        let e = cls.call1((msg,))?;
        for (name, value) in attrs {
            e.setattr(*name, value)?;
        }
        Ok(e)
    });
    match made {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}
