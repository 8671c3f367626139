//! Cache prefetch hints: asking for a line a little before it is needed, where the next
//! address is known (a slot a thread will take a few registrations later, entries a few
//! ahead in a scan).

/// Hints that the line at `p` will be read soon.
#[inline]
pub(crate) fn for_read<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    hint::<{ core::arch::x86_64::_MM_HINT_T0 }, T>(p);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Hints that the line at `p` will be written soon (fetched for ownership where the CPU
/// can).
#[inline]
pub(crate) fn for_write<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    hint::<{ core::arch::x86_64::_MM_HINT_ET0 }, T>(p);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn hint<const KIND: i32, T>(p: *const T) {
    // SAFETY: a prefetch is a hint; it never faults, whatever the address.
    unsafe { core::arch::x86_64::_mm_prefetch::<KIND>(p as *const i8) };
}
