//! C ABI of spot-timer (work in progress).
