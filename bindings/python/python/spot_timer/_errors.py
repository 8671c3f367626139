"""The exception tree of spot_timer: everything it raises derives from SpotTimerError.

Each variant of the core's error type, and of the Spot lifecycle's (``spot_timer.lifecycle``),
has exactly one class here; the native module raises them by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from .lifecycle import Queue as _Queue, SpotKind as _SpotKind, StaleReason as _StaleReason

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
    "NotFoundError",
    "StaleRouteError",
    "CapacityExceededError",
    "UnavailableError",
    "CreationFailedError",
    "WrongKindError",
    "InvalidKindError",
    "LocationStoreError",
    "StoreKindError",
    "NodeClosedError",
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


# -- the Spot lifecycle (spot_timer.lifecycle) -------------------------------------------


class NotFoundError(SpotTimerError, LookupError):
    """No Spot with this id exists (an ordinary send never creates one), or it is not
    active on this node."""

    def __init__(self, message: str = "", *, spot_id: Optional[int] = None) -> None:
        super().__init__(message)
        #: The Spot addressed.
        self.spot_id = spot_id


class StaleRouteError(SpotTimerError):
    """The message reached a node that cannot run it (not the owner any more, its owner
    lease ran out, or the Spot is closing). It did not run and is not retried: the next call
    resolves the Spot again."""

    def __init__(
        self,
        message: str = "",
        *,
        spot_id: Optional[int] = None,
        reason: Optional[_StaleReason] = None,
    ) -> None:
        super().__init__(message)
        #: The Spot addressed.
        self.spot_id = spot_id
        #: What the receiving node found (a ``StaleReason``).
        self.reason = reason


class CapacityExceededError(SpotTimerError):
    """A bounded queue refused the work; ``queue`` names which (a ``Queue``: a Spot's
    application or lifecycle lane, the node's inbound bytes, or the node's active cap)."""

    def __init__(self, message: str = "", *, queue: Optional[_Queue] = None) -> None:
        super().__init__(message)
        #: The queue that refused.
        self.queue = queue


class UnavailableError(SpotTimerError):
    """The Spot's owner cannot be used or reached now (its node is down with its lease not
    yet over, the store cannot be reached, or the answer was lost); no creation was
    started. ``may_have_run`` says whether the request may have run: False — it did not
    run anywhere and may be made again; True — its answer was lost on the way back."""

    def __init__(
        self, message: str = "", *, spot_id: Optional[int] = None, may_have_run: bool = False
    ) -> None:
        super().__init__(message)
        #: The Spot addressed.
        self.spot_id = spot_id
        #: Whether the request may have run (its answer was lost).
        self.may_have_run = may_have_run


class CreationFailedError(SpotTimerError):
    """The Spot's factory failed (raised); its reservation was released, so a later call
    may create it. ``message`` is the factory's error; on the thread whose call ran the
    factory, ``__cause__`` is the exception it raised."""

    def __init__(
        self, text: str = "", *, spot_id: Optional[int] = None, message: Optional[str] = None
    ) -> None:
        super().__init__(text)
        #: The Spot being created.
        self.spot_id = spot_id
        #: The factory's error (``"TypeName: text"``).
        self.message = message


class WrongKindError(SpotTimerError):
    """The id names a Spot of another kind than the call is for (or the call is not allowed
    for its kind: the Entry Spot closes only with its node)."""

    def __init__(
        self,
        message: str = "",
        *,
        spot_id: Optional[int] = None,
        expected: Optional[_SpotKind] = None,
        actual: Optional[_SpotKind] = None,
    ) -> None:
        super().__init__(message)
        #: The Spot addressed.
        self.spot_id = spot_id
        #: The kind the call is for.
        self.expected = expected
        #: The Spot's kind.
        self.actual = actual


class InvalidKindError(InvalidArgumentError):
    """A kind number that is not ENTRY (1), USER (2) or INSTANCE (3)."""


class LocationStoreError(SpotTimerError):
    """The Location Store could not be used (also: etcd could not be reached when
    ``Store.etcd`` connected; the message names the endpoints)."""


class StoreKindError(SpotTimerError, TypeError):
    """The call needs the other kind of Location Store (``Store.kind``): e.g.
    ``expire_node`` or ``len()`` of an etcd store, whose leases and records live in etcd."""


class NodeClosedError(RuntimeClosedError):
    """The node has been shut down."""
