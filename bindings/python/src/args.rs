//! An optional argument whose default is not `None`: the one way the native classes tell
//! "left out" from "given as None".

use pyo3::prelude::*;

/// An optional argument whose default is not `None` (the default is the Rust side's):
/// `Default` when the caller left it out, else what was given, `None` included.
pub enum Arg<'py> {
    Default,
    Given(Bound<'py, PyAny>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for Arg<'py> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Arg::Given(obj.to_owned()))
    }
}

impl<'py> Arg<'py> {
    /// What was given, if anything.
    pub fn given(&self) -> Option<&Bound<'py, PyAny>> {
        match self {
            Arg::Default => None,
            Arg::Given(v) => Some(v),
        }
    }
}
