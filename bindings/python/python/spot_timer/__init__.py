"""spot_timer: one scheduler thread for any number of timers, delivered into Python in batches.

    rt = spot_timer.Runtime()                      # real clock, a dispatcher thread
    owner = rt.owner(7, lease=30.0)
    timer = owner.every(0.5, lambda tick: print(tick), key="poll")
    ...
    timer.cancel(timeout=1.0)
    rt.close()

Delivery modes (``Runtime(dispatch=...)``):

* ``"thread"`` (default): one daemon dispatcher thread keeps one Python thread state and
  enters Python once per batch of ready records, calls the handlers and hands the
  completions back with its next wait for records. ``workers=N`` starts N such threads
  sharing the runtime's records: a handler that blocks (I/O, sleep) holds up only its own
  worker, and an owner with a serial gate still runs one callback at a time.
* ``"asyncio"``: the runtime's wakeup fd is registered with ``loop.add_reader``; handlers
  may be plain functions or coroutine functions (a coroutine's tick completes when it
  finishes).
* ``"manual"``: nothing runs until ``runtime.dispatch()`` is called (deterministic tests,
  together with ``ManualClock``).

The Spot lifecycle (Spots of three kinds on nodes sharing a Location Store, bounded lanes,
idle eviction) is the submodule ``spot_timer.lifecycle``.
"""

from __future__ import annotations

import datetime
import enum
from dataclasses import dataclass
from typing import Callable, Optional, Union

from . import _native
from ._native import *  # Runtime, ManualClock, Owner, Timer, Tick and the exception tree

from importlib.metadata import PackageNotFoundError as _NotInstalled
from importlib.metadata import version as _version

try:
    __version__: str = _version("spot-timer")
except _NotInstalled:  # imported from a source tree, not installed
    __version__ = "0+unknown"

__all__ = [
    "__version__",
    "ManualClock",
    "Runtime",
    "Owner",
    "Timer",
    "Tick",
    "Stats",
    "TimerStats",
    "OverrunPolicy",
    "GateMode",
    "EndReason",
    "Duration",
    "Handler",
    "ExceptionHandler",
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

Duration = Union[float, int, datetime.timedelta]
#: ``handler(tick)``; its return value is ignored unless it is an awaitable (asyncio mode).
Handler = Callable[["Tick"], object]
#: ``exception_handler(exc, tick)``.
ExceptionHandler = Callable[[BaseException, Optional["Tick"]], None]


class OverrunPolicy(enum.IntEnum):
    """What a repeating timer does when its handler finished late (contract T5)."""

    SKIP_LATE_TICKS = 0
    CATCH_UP_BOUNDED = 1
    DELAY_NEXT_TICK = 2


class GateMode(enum.IntEnum):
    """How an owner's timers are admitted: one callback at a time (SERIAL) or independently."""

    SERIAL = 0
    CONCURRENT = 1


class EndReason(enum.IntEnum):
    """Why a timer generation ended (its terminal cancel result)."""

    CANCELLED = 0
    SUPERSEDED = 1
    COMPLETED = 2
    LEASE_EXPIRED = 3
    REVOKED = 4
    RUNTIME_CLOSED = 5


@dataclass(frozen=True)
class Stats:
    """A snapshot of a runtime's counters (contract T7, T10)."""

    scheduler_threads: int
    wakeup_primitives: int
    os_timers: int
    queue_len: int
    live_timers: int
    owners: int
    wakeups: int
    batches: int
    records_published: int
    host_crossings: int
    records_received: int
    completed_ok: int
    completed_failed: int
    completed_deferred: int
    not_started: int
    ticks_skipped: int
    ticks_dropped_authority: int
    registered: int
    ended: int
    cleanup_failures: int
    invalid_completions: int
    stale_entries_dropped: int
    compactions: int
    gate_waits: int
    #: Nominal ticks that had come due, summed over generations when they end. Once every
    #: generation has ended: ``ticks_due == completed_ok + completed_failed + ticks_skipped
    #: + ticks_dropped_authority + ticks_discarded``.
    ticks_due: int
    #: Due ticks never delivered because the generation was cancelled, superseded or the
    #: runtime closed.
    ticks_discarded: int
    #: Records taken back before the host received them (also in ``not_started``). Once every
    #: generation has ended: ``records_published == completed_ok + completed_failed +
    #: completed_deferred + not_started + records_abandoned``.
    records_taken_back: int
    #: Records the host held when the runtime closed.
    records_abandoned: int
    #: Times a registering or completing thread woke the scheduler for an earlier deadline.
    scheduler_wakes_by_hosts: int

    @property
    def records_per_crossing(self) -> float:
        """Records handed into Python per GIL entry (batch crossing)."""
        return self.records_received / self.host_crossings if self.host_crossings else 0.0


@dataclass(frozen=True)
class TimerStats:
    """Fixed-size counters of one timer generation (contract T8)."""

    delivered: int
    failed: int
    skipped_ticks: int
    last_scheduled_index: int


_native.configure(EndReason, Stats, TimerStats)
