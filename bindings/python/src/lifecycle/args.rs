//! Arguments of the lifecycle classes, checked here so that every bad input raises a
//! `SpotTimerError` subclass whose message names the argument.

use std::net::SocketAddr;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyMemoryView, PyString};

use spot_lifecycle::{LaneKind, LaneLimits, NodeConfig, SpotKind};

pub use crate::args::Arg;
use crate::durations::nanos;
use crate::errors::{fail, is_int, py_error, type_name, Exc};

/// An id, count or value: an int in `0..2**64`.
pub fn u64_arg(py: Python<'_>, obj: &Bound<'_, PyAny>, name: &str) -> PyResult<u64> {
    if !is_int(obj) {
        return fail(
            py,
            Exc::ArgumentType,
            format!("{name} must be an int, not {}", type_name(obj)),
        );
    }
    obj.extract::<u64>().map_err(|_| {
        let shown = obj.repr().map(|r| r.to_string()).unwrap_or_default();
        py_error(
            py,
            Exc::InvalidArgument,
            format!("{name} must be in 0..2**64-1, got {shown}"),
        )
    })
}

/// A flag: `True` or `False` only.
pub fn bool_arg(py: Python<'_>, obj: &Bound<'_, PyAny>, name: &str) -> PyResult<bool> {
    match obj.cast::<PyBool>() {
        Ok(b) => Ok(b.is_true()),
        Err(_) => fail(
            py,
            Exc::ArgumentType,
            format!("{name} must be a bool, not {}", type_name(obj)),
        ),
    }
}

/// A Spot kind: `SpotKind` or its number (1, 2, 3); every other number is refused
/// (`InvalidKindError`, a `ValueError`).
pub fn kind_arg(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<SpotKind> {
    if !is_int(obj) {
        return fail(
            py,
            Exc::ArgumentType,
            format!("kind must be a SpotKind, not {}", type_name(obj)),
        );
    }
    let r = match obj.extract::<u32>() {
        Ok(v) => SpotKind::from_u32(v).map_err(|e| e.to_string()),
        Err(_) => Err(format!(
            "invalid spot kind {} (1 = Entry, 2 = User, 3 = Instance)",
            obj.repr().map(|r| r.to_string()).unwrap_or_default()
        )),
    };
    r.map_err(|msg| py_error(py, Exc::InvalidKind, msg))
}

/// A lane: `Lane.APPLICATION` (0) or `Lane.LIFECYCLE` (1).
pub fn lane_arg(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<LaneKind> {
    if is_int(obj) {
        match obj.extract::<u32>() {
            Ok(0) => return Ok(LaneKind::Application),
            Ok(1) => return Ok(LaneKind::Lifecycle),
            _ => {}
        }
        let shown = obj.repr().map(|r| r.to_string()).unwrap_or_default();
        return fail(
            py,
            Exc::InvalidArgument,
            format!("lane must be Lane.APPLICATION (0) or Lane.LIFECYCLE (1), got {shown}"),
        );
    }
    fail(
        py,
        Exc::ArgumentType,
        format!("lane must be a Lane, not {}", type_name(obj)),
    )
}

/// A listen address: a str "IP:PORT" (e.g. "127.0.0.1:0"; "" is none), parsed as every
/// binding parses it (`NodeConfig::parse_listen`).
pub fn listen_arg(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Option<SocketAddr>> {
    let Ok(text) = obj.cast::<PyString>() else {
        return fail(
            py,
            Exc::ArgumentType,
            format!(
                "listen must be a str \"IP:PORT\" or None, not {}",
                type_name(obj)
            ),
        );
    };
    NodeConfig::parse_listen(&text.to_cow()?, "listen").map_err(|e| super::errors::to_py(py, e))
}

/// A message: bytes, bytearray or memoryview (copied).
pub fn payload_arg(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Box<[u8]>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.as_bytes().into());
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(b.to_vec().into_boxed_slice());
    }
    if obj.is_instance_of::<PyMemoryView>() {
        let bytes = py.get_type::<PyBytes>().call1((obj,))?;
        return Ok(bytes.cast::<PyBytes>()?.as_bytes().into());
    }
    let hint = if obj.is_instance_of::<PyString>() {
        " (encode the str first)"
    } else {
        ""
    };
    fail(
        py,
        Exc::ArgumentType,
        format!(
            "payload must be bytes, bytearray or memoryview, not {}{hint}",
            type_name(obj)
        ),
    )
}

/// A lane's limits: `(items, bytes)`. Both are always set (no lane is unbounded).
pub fn limits_arg(
    py: Python<'_>,
    obj: Option<&Bound<'_, PyAny>>,
    name: &str,
    default: LaneLimits,
) -> PyResult<LaneLimits> {
    let Some(obj) = obj else {
        return Ok(default);
    };
    let bad = || {
        py_error(
            py,
            Exc::ArgumentType,
            format!(
                "{name} must be a pair (items, bytes) of ints, not {}",
                obj.repr().map(|r| r.to_string()).unwrap_or_default()
            ),
        )
    };
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(bad());
    }
    let items: Vec<Bound<'_, PyAny>> = match obj.try_iter() {
        Ok(it) => it.collect::<PyResult<_>>().map_err(|_| bad())?,
        Err(_) => return Err(bad()),
    };
    let [items, bytes] = items.as_slice() else {
        return Err(bad());
    };
    Ok(LaneLimits {
        items: u64_arg(py, items, &format!("{name} items"))?,
        bytes: u64_arg(py, bytes, &format!("{name} bytes"))?,
    })
}

/// A duration: seconds (int or float) or a `timedelta`.
pub fn seconds(py: Python<'_>, obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Duration> {
    nanos(py, obj, name).map(Duration::from_nanos)
}

/// An optional duration: `None` is none.
pub fn opt_seconds(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    name: &str,
) -> PyResult<Option<Duration>> {
    if obj.is_none() {
        return Ok(None);
    }
    seconds(py, obj, name).map(Some)
}

/// A duration that must be greater than zero when given.
pub fn positive(py: Python<'_>, d: Option<Duration>, name: &str) -> PyResult<Option<Duration>> {
    if d == Some(Duration::ZERO) {
        return fail(
            py,
            Exc::InvalidDuration,
            format!("{name} must be greater than zero"),
        );
    }
    Ok(d)
}
