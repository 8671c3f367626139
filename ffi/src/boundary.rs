//! The panic boundary every export goes through, the thread-local last-error message, and
//! typed checks of the pointers C hands in.

use std::cell::RefCell;
use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};

use spot_timer_core::Error;

use crate::status::*;

/// Why a call failed: its status code and a readable message.
#[derive(Debug)]
pub(crate) struct Failure {
    pub status: spot_status,
    pub message: String,
}

impl Failure {
    pub fn new(status: spot_status, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::new(status_of(&e), e.to_string())
    }
}

pub(crate) type FfiResult<T = ()> = Result<T, Failure>;

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

fn set_last_error(function: &str, message: &str) {
    let _ = LAST_ERROR.try_with(|e| {
        let mut e = e.borrow_mut();
        e.clear();
        e.push_str(function);
        e.push_str(": ");
        e.push_str(message);
    });
}

/// Runs the body of an export: a panic becomes `SPOT_E_PANIC`, a failure its status code;
/// both record the thread's last-error message. Nothing unwinds into C.
///
/// Inlined into every export with the body: a call that succeeds costs a branch on the
/// result (`catch_unwind` is a landing pad, no code runs for it while nothing panics);
/// failures and panics are handled out of line.
#[inline(always)]
pub(crate) fn boundary(function: &'static str, body: impl FnOnce() -> FfiResult) -> spot_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => SPOT_OK,
        Ok(Err(f)) => failed(function, f),
        Err(payload) => panicked(function, payload),
    }
}

#[cold]
#[inline(never)]
fn failed(function: &str, f: Failure) -> spot_status {
    set_last_error(function, &f.message);
    f.status
}

#[cold]
#[inline(never)]
fn panicked(function: &str, payload: Box<dyn std::any::Any + Send>) -> spot_status {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    set_last_error(function, &format!("panic: {what}"));
    SPOT_E_PANIC
}

/// Runs the body of an infallible export; a panic (a bug) yields `fallback`.
pub(crate) fn infallible<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

/// Checks a pointer C hands in: not NULL and aligned for `T` (one branch when it is).
#[inline(always)]
fn check_ptr<T>(p: *const T, name: &str) -> FfiResult {
    if p.is_null() || (p as usize) & (std::mem::align_of::<T>() - 1) != 0 {
        return Err(bad_ptr(p.is_null(), name));
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn bad_ptr(null: bool, name: &str) -> Failure {
    let why = if null {
        "must not be NULL"
    } else {
        "is not aligned for its type"
    };
    Failure::new(SPOT_E_NULL_ARGUMENT, format!("`{name}` {why}"))
}

/// A required input pointer.
///
/// # Safety
/// When non-null, `p` must point to a valid `T` for the call's duration.
pub(crate) unsafe fn arg_ref<'a, T>(p: *const T, name: &str) -> FfiResult<&'a T> {
    check_ptr(p, name)?;
    Ok(&*p)
}

/// An input array of `n` elements; NULL is allowed when `n == 0`.
///
/// # Safety
/// When `n > 0`, `p` must point to `n` valid elements for the call's duration.
pub(crate) unsafe fn arg_slice<'a, T>(p: *const T, n: usize, name: &str) -> FfiResult<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    check_ptr(p, name)?;
    if n > isize::MAX as usize / std::mem::size_of::<T>().max(1) {
        return Err(Failure::new(
            SPOT_E_INVALID_ARGUMENT,
            format!("`{name}` length {n} is impossibly large"),
        ));
    }
    Ok(std::slice::from_raw_parts(p, n))
}

/// A required output pointer; written only through [`Out::write`], on success.
pub(crate) struct Out<T>(*mut T);

impl<T> Out<T> {
    /// # Safety
    /// When non-null, `p` must be valid for writing a `T`.
    pub unsafe fn new(p: *mut T, name: &str) -> FfiResult<Self> {
        check_ptr(p, name)?;
        Ok(Self(p))
    }

    /// An optional output pointer (NULL: the value is not wanted).
    ///
    /// # Safety
    /// When non-null, `p` must be valid for writing a `T`.
    pub unsafe fn optional(p: *mut T, name: &str) -> FfiResult<Option<Self>> {
        if p.is_null() {
            Ok(None)
        } else {
            Self::new(p, name).map(Some)
        }
    }

    pub fn write(self, value: T) {
        // SAFETY: checked non-null and aligned; the caller promised it is writable.
        unsafe { self.0.write(value) }
    }
}

/// A caller's text buffer, the convention of every function that returns text: `buf` of
/// `cap` bytes receives the text NUL-terminated (cut to `cap - 1` bytes), `*out_len` its
/// full length without the NUL (`>= cap`: the text was cut).
pub(crate) struct TextOut {
    buf: *mut c_char,
    cap: usize,
    len: Out<usize>,
}

impl TextOut {
    /// # Safety
    /// When non-null, `buf` must be valid for writing `cap` bytes and `out_len` for a
    /// `usize`.
    pub unsafe fn new(buf: *mut c_char, cap: usize, out_len: *mut usize) -> FfiResult<Self> {
        let len = Out::new(out_len, "out_len")?;
        if buf.is_null() {
            return Err(Failure::new(SPOT_E_NULL_ARGUMENT, "`buf` must not be NULL"));
        }
        if cap == 0 {
            return Err(Failure::new(
                SPOT_E_INVALID_ARGUMENT,
                "`cap` must be at least 1",
            ));
        }
        Ok(Self { buf, cap, len })
    }

    pub fn write(self, text: &str) {
        let n = text.len().min(self.cap - 1);
        // SAFETY: checked non-null; the caller promised `cap` writable bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), self.buf as *mut u8, n);
            *self.buf.add(n) = 0;
        }
        self.len.write(text.len());
    }
}

/// An output array of `capacity` elements.
pub(crate) struct OutSlice<T> {
    ptr: *mut T,
    capacity: usize,
}

impl<T> OutSlice<T> {
    /// # Safety
    /// When non-null, `p` must be valid for writing `capacity` elements.
    pub unsafe fn new(p: *mut T, capacity: usize, name: &str) -> FfiResult<Self> {
        check_ptr(p, name)?;
        if capacity == 0 {
            return Err(Failure::new(
                SPOT_E_INVALID_ARGUMENT,
                format!("`{name}` capacity must be at least 1"),
            ));
        }
        Ok(Self { ptr: p, capacity })
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Writes `items` (at most `capacity`) to the start of the array.
    pub fn write_all(self, items: impl Iterator<Item = T>) -> usize {
        let mut n = 0;
        for item in items.take(self.capacity) {
            // SAFETY: n < capacity; the caller promised `capacity` writable elements.
            unsafe { self.ptr.add(n).write(item) };
            n += 1;
        }
        n
    }
}

/// Reads a versioned struct whose first field is `uint32_t struct_size`: the size must be
/// this version's size, the size of an older version the library accepts (`older`; the
/// fields it lacks read as zero), or a newer size up to 4096 bytes whose fields beyond
/// this version's (fields of a newer version) are zero.
///
/// # Safety
/// When non-null, `p` must point to `struct_size` readable bytes.
#[inline(always)]
pub(crate) unsafe fn read_versioned<T: Copy>(
    p: *const T,
    name: &str,
    older: &[usize],
) -> FfiResult<T> {
    // The common case, a caller built with this header: the struct as it is, no copy
    // through a zeroed buffer.
    if has_our_size(p) {
        return Ok(p.read());
    }
    read_versioned_other(p, name, older)
}

/// [`read_versioned`] for a struct used in place: `f` reads the caller's struct itself
/// when it has this header's size (no copy), else the copy [`read_versioned`] makes.
///
/// # Safety
/// As [`read_versioned`].
#[inline(always)]
pub(crate) unsafe fn with_versioned<T: Copy, R>(
    p: *const T,
    name: &str,
    older: &[usize],
    f: impl FnOnce(&T) -> FfiResult<R>,
) -> FfiResult<R> {
    if has_our_size(p) {
        return f(&*p);
    }
    f(&read_versioned_other(p, name, older)?)
}

/// `p` is non-null, aligned, and its `struct_size` is this header's size of `T`.
///
/// # Safety
/// When non-null and aligned, `p` must point to at least 4 readable bytes.
#[inline(always)]
unsafe fn has_our_size<T>(p: *const T) -> bool {
    !p.is_null()
        && (p as usize) & (std::mem::align_of::<T>() - 1) == 0
        && (p as *const u32).read() as usize == std::mem::size_of::<T>()
}

/// [`read_versioned`] of a NULL or misaligned pointer, or a `struct_size` other than this
/// version's.
///
/// # Safety
/// As [`read_versioned`].
#[cold]
#[inline(never)]
unsafe fn read_versioned_other<T: Copy>(p: *const T, name: &str, older: &[usize]) -> FfiResult<T> {
    check_ptr(p, name)?;
    let size = (p as *const u32).read() as usize;
    let ours = std::mem::size_of::<T>();
    if (size < ours && !older.contains(&size)) || size > 4096 {
        return Err(Failure::new(
            SPOT_E_BAD_STRUCT_SIZE,
            format!("`{name}->struct_size` is {size}, expected {ours} (sizeof in this header)"),
        ));
    }
    let bytes = std::slice::from_raw_parts(p as *const u8, size);
    if size > ours && bytes[ours..].iter().any(|&b| b != 0) {
        return Err(Failure::new(
            SPOT_E_BAD_STRUCT_SIZE,
            format!("`{name}` sets fields this library version ({ours} bytes) does not know"),
        ));
    }
    let mut value = std::mem::MaybeUninit::<T>::zeroed();
    std::ptr::copy_nonoverlapping(
        p as *const u8,
        value.as_mut_ptr() as *mut u8,
        size.min(ours),
    );
    // SAFETY: every field of these structs is an integer, a pointer or an Option of a
    // function pointer, for all of which zero is a valid value.
    Ok(value.assume_init())
}

/// Writes a versioned output struct of 8-byte fields after its 8-byte header: checks the
/// caller's `struct_size` (at least `oldest`, the size of the first version, at most
/// 4096), copies the whole fields that fit in `min(struct_size, sizeof(T))` bytes — never
/// part of one — and sets `struct_size` to the number of bytes filled.
///
/// # Safety
/// When non-null, `p` must point to `struct_size` writable bytes.
pub(crate) unsafe fn write_versioned<T: Copy>(
    p: *mut T,
    name: &str,
    value: T,
    oldest: usize,
) -> FfiResult {
    check_ptr(p, name)?;
    let size = (p as *const u32).read() as usize;
    if !(oldest..=4096).contains(&size) {
        return Err(Failure::new(
            SPOT_E_BAD_STRUCT_SIZE,
            format!(
                "`{name}->struct_size` is {size}: set it to sizeof the struct (at least {oldest})"
            ),
        ));
    }
    let n = size.min(std::mem::size_of::<T>()) / 8 * 8;
    std::ptr::copy_nonoverlapping(&value as *const T as *const u8, p as *mut u8, n);
    (p as *mut u32).write(n as u32);
    Ok(())
}

/// The name of a status code as a static NUL-terminated string ("SPOT_E_TIMEOUT");
/// "SPOT_E_UNKNOWN_STATUS" for a value this version does not know.
///
/// Infallible. The string is static: never free it. Thread-safe.
#[no_mangle]
pub extern "C" fn spot_status_name(status: spot_status) -> *const c_char {
    infallible(name_of(SPOT_E_PANIC).as_ptr().cast(), || {
        name_of(status).as_ptr().cast()
    })
}

/// Copies the calling thread's last error message into `buf` (capacity `len` bytes,
/// always NUL-terminated when `len > 0`, truncated if needed) and returns the full length
/// of the message in bytes, excluding the NUL; 0 when no call on this thread has failed.
///
/// Infallible. `buf` may be NULL when `len` is 0 (to ask for the length). The message is
/// that of the most recent failed `spot_*` call on the calling thread; successful calls do
/// not clear it. Thread-safe (the message is per thread).
#[no_mangle]
pub unsafe extern "C" fn spot_last_error(buf: *mut c_char, len: usize) -> usize {
    infallible(0, || {
        LAST_ERROR
            .try_with(|e| {
                let e = e.borrow();
                if !buf.is_null() && len > 0 {
                    let n = e.len().min(len - 1);
                    std::ptr::copy_nonoverlapping(e.as_ptr(), buf as *mut u8, n);
                    *buf.add(n) = 0;
                }
                e.len()
            })
            .unwrap_or(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_becomes_status_and_message() {
        let s = boundary("spot_test", || panic!("boom"));
        assert_eq!(s, SPOT_E_PANIC);
        let mut buf = [0 as c_char; 64];
        let n = unsafe { spot_last_error(buf.as_mut_ptr(), buf.len()) };
        let msg = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
        assert_eq!(msg.to_str().unwrap(), "spot_test: panic: boom");
        assert_eq!(n, msg.to_bytes().len());
    }

    #[test]
    fn last_error_truncates() {
        let s = boundary("f", || Err(Failure::new(SPOT_E_TIMEOUT, "0123456789")));
        assert_eq!(s, SPOT_E_TIMEOUT);
        let mut buf = [1 as c_char; 4];
        let n = unsafe { spot_last_error(buf.as_mut_ptr(), buf.len()) };
        assert_eq!(n, "f: 0123456789".len());
        assert_eq!(buf[3], 0);
        assert_eq!(unsafe { spot_last_error(std::ptr::null_mut(), 0) }, n);
    }

    #[test]
    fn infallible_swallows_panic() {
        assert_eq!(infallible(7, || panic!("x")), 7);
    }
}
