"""The exception tree of spot_timer: everything it raises derives from SpotTimerError.

Each variant of the core's error type has exactly one class here; the native module
raises them by name.
"""

from __future__ import annotations

__all__ = [
    "SpotTimerError",
    "InvalidArgumentError",
    "InvalidDurationError",
    "ArgumentTypeError",
    "HandlerNotCallableError",
    "UnknownOwnerError",
    "LeaseExpiredError",
    "RevokedError",
    "StaleHandleError",
    "ForeignTimerError",
    "InvalidCompletionError",
    "CancelTimeoutError",
    "WouldDeadlockError",
    "CleanupFailedError",
    "RuntimeClosedError",
    "NotManualClockError",
    "CapacityExhaustedError",
    "NativeOSError",
    "DispatchModeError",
]


class SpotTimerError(Exception):
    """Root of every exception raised by spot_timer."""


class InvalidArgumentError(SpotTimerError, ValueError):
    """An argument is outside its domain (zero period, max_catch_up_ticks out of range...)."""


class InvalidDurationError(InvalidArgumentError):
    """A duration is negative, NaN, infinite or too large."""


class ArgumentTypeError(SpotTimerError, TypeError):
    """An argument has the wrong type."""


class HandlerNotCallableError(ArgumentTypeError):
    """The handler (or release hook, or exception handler) is not callable."""


class UnknownOwnerError(SpotTimerError, LookupError):
    """No owner with this id was acquired on this runtime."""


class LeaseExpiredError(SpotTimerError):
    """The owner's lease deadline passed; the authority is over and must be re-acquired."""


class RevokedError(SpotTimerError):
    """The owner authority was revoked or superseded by a newer one."""


class StaleHandleError(SpotTimerError):
    """The handle does not name a live or recorded timer generation of this runtime."""


class ForeignTimerError(StaleHandleError):
    """The timer belongs to a different runtime."""


class InvalidCompletionError(SpotTimerError):
    """A completion token matched no record awaiting completion (internal)."""


class CancelTimeoutError(SpotTimerError, TimeoutError):
    """A blocking cancel ran out of time; the cancel itself goes on."""


class WouldDeadlockError(SpotTimerError, RuntimeError):
    """The blocking wait would wait for the calling thread itself (cancel from inside the
    timer's own handler). The cancel has taken effect; use cancel_nowait()/cancel_async()."""


class CleanupFailedError(SpotTimerError):
    """The timer's release hook failed: the generation's one terminal result."""


class RuntimeClosedError(SpotTimerError):
    """The runtime has been closed."""


class NotManualClockError(SpotTimerError):
    """advance() needs a runtime on a ManualClock."""


class CapacityExhaustedError(SpotTimerError):
    """The runtime's timer table is full."""


class NativeOSError(SpotTimerError, OSError):
    """An operating-system call of the runtime failed."""


class DispatchModeError(SpotTimerError):
    """The call does not fit the runtime's delivery mode (e.g. dispatch() on a threaded runtime)."""
