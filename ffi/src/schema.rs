//! The names of the ABI's enumerations, from the Rust enums themselves: what every binding
//! checks its own mirror against (a value added in Rust and missing in a binding fails
//! that binding's tests). Status names are `spot_status_name` (boundary.rs).

use std::ffi::c_char;

use spot_lifecycle::CloseReason;
use spot_timer_core::EndReason;

use crate::boundary::infallible;
use crate::node_types::close_reason_to_u32;
use crate::types::end_reason_to_u32;

fn end_reason_name(r: EndReason) -> &'static [u8] {
    match r {
        EndReason::Cancelled => b"SPOT_END_CANCELLED\0",
        EndReason::Superseded => b"SPOT_END_SUPERSEDED\0",
        EndReason::Completed => b"SPOT_END_COMPLETED\0",
        EndReason::LeaseExpired => b"SPOT_END_LEASE_EXPIRED\0",
        EndReason::Revoked => b"SPOT_END_REVOKED\0",
        EndReason::RuntimeClosed => b"SPOT_END_RUNTIME_CLOSED\0",
    }
}

fn close_reason_name(r: CloseReason) -> &'static [u8] {
    match r {
        CloseReason::IdleEvicted => b"SPOT_CLOSE_IDLE_EVICTED\0",
        CloseReason::Closed => b"SPOT_CLOSE_CLOSED\0",
        CloseReason::NodeShutdown => b"SPOT_CLOSE_NODE_SHUTDOWN\0",
        CloseReason::AuthorityLost => b"SPOT_CLOSE_AUTHORITY_LOST\0",
        CloseReason::CreationFailed => b"SPOT_CLOSE_CREATION_FAILED\0",
    }
}

const UNKNOWN_END: &[u8] = b"SPOT_END_UNKNOWN\0";
const UNKNOWN_CLOSE: &[u8] = b"SPOT_CLOSE_UNKNOWN\0";

/// Inside a release hook (`spot_release_fn`): why the generation whose hook runs ended
/// (`SPOT_END_*`), so a host can keep the result with its own handle of the generation —
/// its id may go stale once the slot is reused. `UINT32_MAX` when no release hook runs on
/// the calling thread.
///
/// Infallible. Thread-safe (it answers for the calling thread).
#[no_mangle]
pub extern "C" fn spot_release_reason() -> u32 {
    crate::core_runtime::release_reason()
}

/// The name of an end reason (`SPOT_END_*`) as a static NUL-terminated string
/// ("SPOT_END_CANCELLED"); "SPOT_END_UNKNOWN" for a value this version does not know.
///
/// Infallible. The string is static: never free it. Thread-safe.
#[no_mangle]
pub extern "C" fn spot_end_reason_name(reason: u32) -> *const c_char {
    infallible(UNKNOWN_END.as_ptr().cast(), || {
        let found = EndReason::ALL
            .into_iter()
            .find(|r| end_reason_to_u32(*r) == reason);
        found.map_or(UNKNOWN_END, end_reason_name).as_ptr().cast()
    })
}

/// The name of a closing reason (`SPOT_CLOSE_*`) as a static NUL-terminated string
/// ("SPOT_CLOSE_IDLE_EVICTED"); "SPOT_CLOSE_UNKNOWN" for a value this version does not
/// know.
///
/// Infallible. The string is static: never free it. Thread-safe.
#[no_mangle]
pub extern "C" fn spot_close_reason_name(reason: u32) -> *const c_char {
    infallible(UNKNOWN_CLOSE.as_ptr().cast(), || {
        let found = CloseReason::ALL
            .into_iter()
            .find(|r| close_reason_to_u32(*r) == reason);
        found
            .map_or(UNKNOWN_CLOSE, close_reason_name)
            .as_ptr()
            .cast()
    })
}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;

    use super::*;
    use crate::boundary::spot_status_name;

    /// `(name, value)` of every `#define <prefix>…` of the committed header.
    fn header_defines(prefix: &str) -> Vec<(String, u32)> {
        let header = include_str!("../../include/spot_timer.h");
        header
            .lines()
            .filter_map(|l| l.strip_prefix("#define "))
            .filter(|l| l.starts_with(prefix))
            .filter_map(|l| {
                let mut parts = l.split_whitespace();
                let name = parts.next()?.to_string();
                let value = parts.next()?.parse().ok()?;
                Some((name, value))
            })
            .collect()
    }

    fn name(p: *const c_char) -> String {
        // SAFETY: the functions return static NUL-terminated strings.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }

    /// Every value the library names is a `#define` of the header with that name, and the
    /// other way round: a code added on one side only fails here.
    fn agree(prefix: &str, lookup: impl Fn(u32) -> String, unknown: &str) {
        let defines = header_defines(prefix);
        assert!(!defines.is_empty(), "no {prefix} defines in the header");
        for (n, v) in &defines {
            assert_eq!(&lookup(*v), n, "{n} = {v}");
        }
        let named = (0..256).filter(|v| lookup(*v) != unknown).count();
        assert_eq!(
            named,
            defines.len(),
            "{prefix}: named by the library vs in the header"
        );
    }

    #[test]
    fn status_names_are_the_headers_codes() {
        let mut defines = header_defines("SPOT_E_");
        defines.extend(header_defines("SPOT_OK"));
        for (n, v) in &defines {
            assert_eq!(name(spot_status_name(*v as i32)), *n);
        }
        let named = (0..256)
            .filter(|v| name(spot_status_name(*v)) != "SPOT_E_UNKNOWN_STATUS")
            .count();
        assert_eq!(named, defines.len());
    }

    #[test]
    fn end_reason_names_are_the_headers_and_the_cores() {
        agree(
            "SPOT_END_",
            |v| name(spot_end_reason_name(v)),
            "SPOT_END_UNKNOWN",
        );
        assert_eq!(header_defines("SPOT_END_").len(), EndReason::ALL.len());
    }

    #[test]
    fn close_reason_names_are_the_headers_and_the_lifecycles() {
        agree(
            "SPOT_CLOSE_",
            |v| name(spot_close_reason_name(v)),
            "SPOT_CLOSE_UNKNOWN",
        );
        assert_eq!(header_defines("SPOT_CLOSE_").len(), CloseReason::ALL.len());
    }
}
