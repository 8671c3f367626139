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

import asyncio
import atexit
import concurrent.futures
import datetime
import enum
import logging
import math
import signal
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Dict, Hashable, List, Literal, Optional, Tuple, Union

from . import _native
from ._native import (
    ArgumentTypeError,
    CancelTimeoutError,
    CapacityExceededError,
    CapacityExhaustedError,
    CleanupFailedError,
    CreationFailedError,
    DispatchModeError,
    ForeignTimerError,
    HandlerNotCallableError,
    InvalidArgumentError,
    InvalidCompletionError,
    InvalidDurationError,
    InvalidKindError,
    LeaseExpiredError,
    LocationStoreError,
    NativeOSError,
    NodeClosedError,
    NotFoundError,
    NotManualClockError,
    RevokedError,
    RuntimeClosedError,
    SpotTimerError,
    StaleHandleError,
    StaleRouteError,
    StoreKindError,
    UnavailableError,
    UnknownOwnerError,
    WouldDeadlockError,
    WrongKindError,
)

Tick = _native.Tick
#: One authority of an owner (a Spot): registers timers, renews or revokes its lease
#: (native: ``Runtime.owner()`` makes them).
Owner = _native.Owner
#: The handle of one timer generation (owner, key, generation) (native).
Timer = _native.Timer

from importlib.metadata import PackageNotFoundError as _NotInstalled
from importlib.metadata import version as _version

try:
    __version__: str = _version("spot-timer")
except _NotInstalled:  # imported from a source tree, not installed
    __version__ = "0+unknown"

__all__ = [
    "__version__",
    "Runtime",
    "ManualClock",
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

logger = logging.getLogger("spot_timer")

Duration = Union[float, int, datetime.timedelta]
#: ``handler(tick)``; its return value is ignored unless it is an awaitable (asyncio mode).
Handler = Callable[["Tick"], object]
#: ``exception_handler(exc, tick)``.
ExceptionHandler = Callable[[BaseException, Optional["Tick"]], None]

_U64_MAX = (1 << 64) - 1
_MAX_RECORDS_PER_BATCH = 8192
# Time one batch of handlers may take, by default (see Runtime(batch_budget=)).
_BATCH_BUDGET = 0.001


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


def _nanos(value: object, name: str) -> int:
    """A duration (float/int seconds or timedelta) as non-negative integer nanoseconds."""
    return _native.nanos(value, name)


def _opt_nanos(value: object, name: str) -> Optional[int]:
    return None if value is None else _nanos(value, name)


def _check_callable(obj: Any, name: str) -> None:
    if not callable(obj):
        raise HandlerNotCallableError(f"{name} must be callable, got {type(obj).__name__}")


def _default_exception_handler(exc: BaseException, tick: Any) -> None:
    logger.error("spot_timer handler raised (%r)", tick, exc_info=exc)


def _end_reason(code: int) -> EndReason:
    return EndReason(code)


class ManualClock:
    """A clock that moves only when advanced: deterministic tests.

    ``advance()`` returns after every runtime on this clock fired what became due (the
    records are then ready for delivery; in ``dispatch="manual"`` mode call
    ``runtime.dispatch()`` to run the handlers).
    """

    def __init__(self) -> None:
        self._native = _native.ManualClock()
        self._runtimes: "weakref.WeakSet[Runtime]" = weakref.WeakSet()

    @property
    def now(self) -> float:
        """Current time in seconds since the clock was created."""
        return self._native.now_ns() / 1e9

    @property
    def now_ns(self) -> int:
        return int(self._native.now_ns())

    def advance(self, by: Duration) -> None:
        ns = _nanos(by, "by")
        self._native.advance(ns)
        for rt in list(self._runtimes):
            if not rt.closed:
                rt._native.sync()


class Runtime:
    """One spot-timer runtime: one scheduler thread, one deadline queue for all its timers."""

    def __init__(
        self,
        clock: Optional[ManualClock] = None,
        *,
        dispatch: Literal["thread", "asyncio", "manual"] = "thread",
        exception_handler: Optional[ExceptionHandler] = None,
        loop: Optional[asyncio.AbstractEventLoop] = None,
        max_batch: int = _MAX_RECORDS_PER_BATCH,
        batch_window: Duration = 0,
        workers: int = 1,
        batch_budget: Optional[Duration] = _BATCH_BUDGET,
    ) -> None:
        if clock is not None and not isinstance(clock, ManualClock):
            raise ArgumentTypeError(
                f"clock must be None (real clock) or a ManualClock, not {type(clock).__name__}"
            )
        if dispatch not in ("thread", "asyncio", "manual"):
            raise InvalidArgumentError(
                f"dispatch must be 'thread', 'asyncio' or 'manual', got {dispatch!r}"
            )
        if isinstance(max_batch, bool) or not isinstance(max_batch, int):
            raise ArgumentTypeError("max_batch must be an int")
        if not 1 <= max_batch <= 1 << 20:
            raise InvalidArgumentError(f"max_batch must be in 1..={1 << 20}, got {max_batch}")
        if isinstance(workers, bool) or not isinstance(workers, int):
            raise ArgumentTypeError("workers must be an int")
        if not 1 <= workers <= 64:
            raise InvalidArgumentError(f"workers must be in 1..=64, got {workers}")
        if workers != 1 and dispatch != "thread":
            raise DispatchModeError(f"workers={workers} is for dispatch='thread', not {dispatch!r}")
        if exception_handler is not None:
            _check_callable(exception_handler, "exception_handler")
        window_ns = _nanos(batch_window, "batch_window")
        if window_ns > 100_000_000:
            raise InvalidDurationError("batch_window must be at most 0.1 s")
        budget_ns = _opt_nanos(batch_budget, "batch_budget")
        if budget_ns is not None and not 0 < budget_ns <= 1_000_000_000:
            raise InvalidDurationError(
                "batch_budget must be more than 0 and at most 1 s (None: take up to max_batch)"
            )
        self._budget_ns = budget_ns or 0
        self._clock = clock
        self._mode = dispatch
        self._max_batch = max_batch
        self._native = _native.Runtime(clock._native if clock is not None else None)
        self._native.attach_host(weakref.ref(self))
        self._exc_handler: ExceptionHandler = exception_handler or _default_exception_handler
        self._native.set_exception_handler(self._exc_handler)
        self._closed = False
        self._threads: List[threading.Thread] = []
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._fd = -1
        if clock is not None:
            clock._runtimes.add(self)
        if dispatch == "thread":
            self._native.set_mode(_native.MODE_THREAD)
            # Each worker pumps the same runtime: they share one backlog, so a handler that
            # blocks holds up only its own worker (an owner with a serial gate still runs one
            # callback at a time: the runtime hands out one of its records at a time).
            for i in range(workers):
                t = threading.Thread(
                    target=_dispatcher_main,
                    args=(
                        self._native.dispatcher(),
                        max_batch,
                        window_ns,
                        self._budget_ns,
                    ),
                    name="spot-timer-dispatch" if workers == 1 else f"spot-timer-dispatch-{i}",
                    daemon=True,
                )
                self._threads.append(t)
                t.start()
        elif dispatch == "asyncio":
            if loop is None:
                try:
                    loop = asyncio.get_running_loop()
                except RuntimeError:
                    self._native.close()
                    raise DispatchModeError(
                        "dispatch='asyncio' needs a running event loop or loop=..."
                    ) from None
            self._native.set_mode(_native.MODE_ASYNCIO)
            self._loop = loop
            self._fd = self._native.wakeup_fd()
            loop.add_reader(self._fd, self._pump_asyncio)
        else:
            self._native.set_mode(_native.MODE_MANUAL)
        _live_runtimes.add(self)

    # -- context manager -------------------------------------------------------------
    def __enter__(self) -> "Runtime":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> "Runtime":
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    # -- properties ------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed or bool(self._native.is_closed())

    @property
    def clock(self) -> Optional[ManualClock]:
        return self._clock

    @property
    def dispatch_mode(self) -> str:
        return self._mode

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeClosedError("runtime is closed")

    # -- owners and timers -----------------------------------------------------------
    def owner(
        self,
        id: int,
        *,
        lease: Optional[Duration] = None,
        gate: GateMode = GateMode.SERIAL,
    ) -> "Owner":
        """Starts a new authority for owner ``id`` (an older authority of the id is revoked).

        ``lease``: seconds/timedelta until the authority expires unless renewed (None: never).
        ``gate``: SERIAL (default: one callback at a time across the owner's timers) or
        CONCURRENT.
        """
        self._check_open()
        if isinstance(id, bool) or not isinstance(id, int):
            raise ArgumentTypeError(f"owner id must be an int, not {type(id).__name__}")
        if not 0 <= id <= _U64_MAX:
            raise InvalidArgumentError(f"owner id must be in 0..2**64-1, got {id}")
        lease_ns = _opt_nanos(lease, "lease")
        if lease_ns == 0:
            raise InvalidDurationError("lease must be greater than zero")
        if not isinstance(gate, GateMode):
            if isinstance(gate, int) and not isinstance(gate, bool) and gate in (0, 1):
                gate = GateMode(gate)
            else:
                raise ArgumentTypeError(f"gate must be a GateMode, not {gate!r}")
        owner: Owner = self._native.acquire_owner(self, id, lease_ns, gate == GateMode.CONCURRENT)
        return owner

    def cancel(self, timer: "Timer", timeout: Optional[Duration] = None) -> Optional[EndReason]:
        """Cancels ``timer`` (which must belong to this runtime) and waits for its result
        (``Timer.cancel``: in asyncio mode on the loop thread it never waits)."""
        if not isinstance(timer, Timer):
            raise ArgumentTypeError(f"expected a Timer, not {type(timer).__name__}")
        if timer.runtime is not self or not self._native.owns(timer):
            raise ForeignTimerError("the timer belongs to a different runtime")
        return timer.cancel(timeout)

    # -- manual clock ----------------------------------------------------------------
    def advance(self, by: Duration) -> None:
        """Advances the ManualClock; returns once everything that became due was fired."""
        if self._clock is None:
            raise NotManualClockError("runtime does not use a manual clock")
        self._check_open()
        self._clock.advance(by)

    def now(self) -> float:
        """The runtime's clock in seconds (monotonic; boot time for the real clock)."""
        return self._native.now_ns() / 1e9

    # -- delivery ----------------------------------------------------------------------
    def dispatch(self, timeout: Optional[Duration] = 0) -> int:
        """``dispatch="manual"``: delivers ready records on this thread until none is left
        and every completion was applied; returns the number of records handled. With a
        timeout, first waits up to that long for records (None: until some arrive)."""
        if self._mode != "manual":
            raise DispatchModeError(
                f"dispatch() is for dispatch='manual' runtimes; this one uses {self._mode!r}"
            )
        self._check_open()
        timeout_ns: Optional[int] = _opt_nanos(timeout, "timeout")
        total = 0
        while True:
            r = self._native.pump(timeout_ns, self._max_batch, False, 0, self._budget_ns)
            if r is None:
                break
            self._after_pump(r)
            n, pending = r.ran, r.pending
            total += n
            timeout_ns = 0
            if n == 0 and pending == 0:
                if self._clock is None:
                    break
                # Records that went stale were completed inside the exchange without waiting
                # for the scheduler; wait for it so what they changed is visible (and
                # deliver anything they made due).
                self._native.sync()
                r = self._native.pump(0, self._max_batch, False, 0, self._budget_ns)
                if r is None:
                    break
                self._after_pump(r)
                n, pending = r.ran, r.pending
                total += n
                if n == 0 and pending == 0:
                    break
        return total

    def _pump_asyncio(self) -> None:
        if self._closed:
            return
        r = self._native.pump(0, self._max_batch, True, 0, self._budget_ns)
        if r is None:
            self._detach_loop()
            return
        self._after_pump(r)

    def _after_pump(self, r: Any) -> None:
        """What a pump leaves to Python: the coroutines of kept records to start (asyncio
        mode)."""
        for kept in r.coroutines:
            self._start_coroutine(kept)

    def _start_coroutine(self, kept: Any) -> None:
        loop = self._loop
        assert loop is not None
        task = asyncio.ensure_future(kept.coro, loop=loop)
        tick = kept.tick

        def done(t: "asyncio.Future[Any]") -> None:
            ok = True
            if t.cancelled():
                ok = False
            else:
                exc = t.exception()
                if exc is not None:
                    ok = False
                    self._report(exc, tick)
            kept.complete(ok)

        task.add_done_callback(done)

    def _report(self, exc: BaseException, tick: Any) -> None:
        try:
            self._exc_handler(exc, tick)
        except Exception:  # pragma: no cover - last resort
            logger.exception("spot_timer exception handler raised")

    def set_exception_handler(self, handler: Optional[ExceptionHandler]) -> None:
        """Sets where handler exceptions go (``handler(exc, tick)``); None: ``logging``."""
        if handler is not None:
            _check_callable(handler, "exception handler")
        self._exc_handler = handler or _default_exception_handler
        self._native.set_exception_handler(self._exc_handler)

    # -- stats and shutdown --------------------------------------------------------------
    def stats(self) -> Stats:
        return Stats(**self._native.stats())

    def metrics(self) -> List[Tuple[str, str, int]]:
        """Every stats field as ``(name, "gauge" | "counter", value)``."""
        return list(self._native.metrics())

    def lateness(self) -> Tuple[List[Tuple[Optional[float], int]], float]:
        """How late records were handed over (hand-over minus the nominal due time of each
        record's tick): ``([(upper bound in seconds, or None for the last bucket, count)],
        sum in seconds)`` — fixed log-linear buckets, not cumulative."""
        buckets, sum_ns = self._native.lateness()
        return [(None if ub is None else ub / 1e9, c) for ub, c in buckets], sum_ns / 1e9

    def lateness_quantile(self, q: float) -> Optional[float]:
        """Seconds: the upper bound of the bucket holding quantile ``q`` (0..1) of the
        lateness; None when nothing was recorded."""
        if not 0.0 <= q <= 1.0:
            raise InvalidArgumentError(f"quantile {q!r} is not between 0 and 1")
        buckets, _ = self.lateness()
        total = sum(c for _, c in buckets)
        if total == 0:
            return None
        rank = max(1, math.ceil(q * total))
        seen = 0
        for ub, c in buckets:
            seen += c
            if seen >= rank:
                return math.inf if ub is None else ub
        return math.inf

    def prometheus(self, prefix: str = "spot_timer") -> str:
        """The stats (gauges and counters, counters ending in ``_total``) and the lateness
        histogram in the Prometheus text format 0.0.4."""
        return str(self._native.prometheus(prefix))

    def held_python_objects(self) -> int:
        """Python callables the runtime holds for live timers (diagnostics)."""
        return int(self._native.held_objects())

    def _detach_loop(self) -> None:
        loop, self._loop = self._loop, None
        if loop is not None and self._fd >= 0:
            try:
                if _on_loop_thread(loop) or not loop.is_running():
                    loop.remove_reader(self._fd)
                else:
                    loop.call_soon_threadsafe(loop.remove_reader, self._fd)
            except (RuntimeError, ValueError, OSError):
                pass
        self._fd = -1

    def close(self, timeout: Optional[Duration] = 2.0) -> None:
        """Ends every timer (EndReason.RUNTIME_CLOSED), stops the scheduler and the
        dispatcher. Idempotent. Waits up to ``timeout`` for the dispatcher thread."""
        if self._closed:
            return
        self._closed = True
        self._detach_loop()
        self._native.close()
        deadline = None if timeout is None else time.monotonic() + _nanos(timeout, "timeout") / 1e9
        for t in self._threads:
            if t is not threading.current_thread() and t.is_alive():
                t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        _live_runtimes.discard(self)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<spot_timer.Runtime {self._mode} {state}>"


def _on_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


async def _cancel_async(timer: Any) -> EndReason:
    loop = asyncio.get_running_loop()
    fut: "asyncio.Future[EndReason]" = loop.create_future()
    timer._await_end(fut, loop)
    return await fut


def _dispatcher_main(
    native: Any,
    max_batch: int,
    window_ns: int,
    budget_ns: int,
) -> None:
    """The dispatcher thread: one Python thread state for the runtime's life, one GIL entry
    per batch (the native pump waits detached and runs the whole batch when attached).
    ``native`` is a handle without Python references, so the runtime stays collectable."""
    while True:
        try:
            r = native.pump(None, max_batch, False, window_ns, budget_ns)
        except KeyboardInterrupt:
            # A handler raised it (its tick completed as failed). Only the main thread gets
            # KeyboardInterrupt in Python, so it goes there as a Ctrl-C would: SIGINT to the
            # main thread, which also wakes it from a blocking call.
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
            continue
        except SystemExit as e:
            # As threading does for a thread that raises SystemExit: not an error to report;
            # the handler's tick completed as failed and delivery goes on.
            logger.debug("spot_timer handler raised SystemExit(%r) on the dispatcher thread", e.code)
            continue
        except BaseException:  # pragma: no cover - keep delivering
            logger.exception("spot_timer dispatcher error")
            if native.is_closed():
                return
            continue
        if r is None:
            return


_live_runtimes: "weakref.WeakSet[Runtime]" = weakref.WeakSet()


@atexit.register
def _close_all_at_exit() -> None:
    """Interpreter shutdown: close every live runtime so no dispatcher or scheduler thread
    touches the interpreter while it finalizes."""
    for rt in list(_live_runtimes):
        try:
            rt.close(timeout=1.0)
        except Exception:  # pragma: no cover
            pass


_native.configure(EndReason, TimerStats, _cancel_async)
