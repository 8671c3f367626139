import asyncio
import concurrent.futures
import datetime
import enum
import logging
from dataclasses import dataclass
from typing import Any, Callable, Dict, Hashable, List, Literal, Optional, Tuple, Union, final

__version__: str

from ._errors import (
    ArgumentTypeError as ArgumentTypeError,
    CancelTimeoutError as CancelTimeoutError,
    CapacityExceededError as CapacityExceededError,
    CapacityExhaustedError as CapacityExhaustedError,
    CleanupFailedError as CleanupFailedError,
    CreationFailedError as CreationFailedError,
    DispatchModeError as DispatchModeError,
    ForeignTimerError as ForeignTimerError,
    HandlerNotCallableError as HandlerNotCallableError,
    InvalidArgumentError as InvalidArgumentError,
    InvalidCompletionError as InvalidCompletionError,
    InvalidDurationError as InvalidDurationError,
    InvalidKindError as InvalidKindError,
    LeaseExpiredError as LeaseExpiredError,
    LocationStoreError as LocationStoreError,
    NativeOSError as NativeOSError,
    NodeClosedError as NodeClosedError,
    NotFoundError as NotFoundError,
    NotManualClockError as NotManualClockError,
    RevokedError as RevokedError,
    RuntimeClosedError as RuntimeClosedError,
    SpotTimerError as SpotTimerError,
    StaleHandleError as StaleHandleError,
    StaleRouteError as StaleRouteError,
    StoreKindError as StoreKindError,
    UnavailableError as UnavailableError,
    UnknownOwnerError as UnknownOwnerError,
    WouldDeadlockError as WouldDeadlockError,
    WrongKindError as WrongKindError,
)

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

logger: logging.Logger

Duration = Union[float, int, datetime.timedelta]
Handler = Callable[[Tick], object]
ExceptionHandler = Callable[[BaseException, Optional[Tick]], None]

@final
class Tick:
    """Tick info of one callback (contract T4); frozen."""
    @property
    def delivery_index(self) -> int: ...
    @property
    def scheduled_index(self) -> int: ...
    @property
    def skipped_ticks(self) -> int: ...
    @property
    def owner_id(self) -> int: ...
    @property
    def key(self) -> Hashable: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

class OverrunPolicy(enum.IntEnum):
    SKIP_LATE_TICKS = 0
    CATCH_UP_BOUNDED = 1
    DELAY_NEXT_TICK = 2

class GateMode(enum.IntEnum):
    SERIAL = 0
    CONCURRENT = 1

class EndReason(enum.IntEnum):
    CANCELLED = 0
    SUPERSEDED = 1
    COMPLETED = 2
    LEASE_EXPIRED = 3
    REVOKED = 4
    RUNTIME_CLOSED = 5

@dataclass(frozen=True)
class Stats:
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
    ticks_due: int
    ticks_discarded: int
    records_taken_back: int
    records_abandoned: int
    scheduler_wakes_by_hosts: int
    def __init__(
        self,
        scheduler_threads: int,
        wakeup_primitives: int,
        os_timers: int,
        queue_len: int,
        live_timers: int,
        owners: int,
        wakeups: int,
        batches: int,
        records_published: int,
        host_crossings: int,
        records_received: int,
        completed_ok: int,
        completed_failed: int,
        completed_deferred: int,
        not_started: int,
        ticks_skipped: int,
        ticks_dropped_authority: int,
        registered: int,
        ended: int,
        cleanup_failures: int,
        invalid_completions: int,
        stale_entries_dropped: int,
        compactions: int,
        gate_waits: int,
        ticks_due: int,
        ticks_discarded: int,
        records_taken_back: int,
        records_abandoned: int,
        scheduler_wakes_by_hosts: int,
    ) -> None: ...
    @property
    def records_per_crossing(self) -> float: ...

@dataclass(frozen=True)
class TimerStats:
    delivered: int
    failed: int
    skipped_ticks: int
    last_scheduled_index: int
    def __init__(
        self, delivered: int, failed: int, skipped_ticks: int, last_scheduled_index: int
    ) -> None: ...

class ManualClock:
    def __init__(self) -> None: ...
    @property
    def now(self) -> float: ...
    @property
    def now_ns(self) -> int: ...
    def advance(self, by: Duration) -> None: ...

class Runtime:
    def __init__(
        self,
        clock: Optional[ManualClock] = None,
        *,
        dispatch: Literal["thread", "asyncio", "manual"] = "thread",
        exception_handler: Optional[ExceptionHandler] = None,
        loop: Optional[asyncio.AbstractEventLoop] = None,
        max_batch: int = 8192,
        batch_window: Duration = 0,
        workers: int = 1,
        batch_budget: Optional[Duration] = 0.001,
    ) -> None: ...
    def __enter__(self) -> Runtime: ...
    def __exit__(self, *exc: object) -> None: ...
    async def __aenter__(self) -> Runtime: ...
    async def __aexit__(self, *exc: object) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def clock(self) -> Optional[ManualClock]: ...
    @property
    def dispatch_mode(self) -> str: ...
    def owner(
        self, id: int, *, lease: Optional[Duration] = None, gate: GateMode = GateMode.SERIAL
    ) -> Owner: ...
    def cancel(self, timer: Timer, timeout: Optional[Duration] = None) -> Optional[EndReason]: ...
    def advance(self, by: Duration) -> None: ...
    def now(self) -> float: ...
    def dispatch(self, timeout: Optional[Duration] = 0) -> int: ...
    def set_exception_handler(self, handler: Optional[ExceptionHandler]) -> None: ...
    def stats(self) -> Stats: ...
    def metrics(self) -> List[Tuple[str, str, int]]: ...
    def lateness(self) -> Tuple[List[Tuple[Optional[float], int]], float]: ...
    def lateness_quantile(self, q: float) -> Optional[float]: ...
    def prometheus(self, prefix: str = "spot_timer") -> str: ...
    def held_python_objects(self) -> int: ...
    def close(self, timeout: Optional[Duration] = 2.0) -> None: ...

@final
class Owner:
    """One authority of an owner (a Spot); made by ``Runtime.owner()``."""
    @property
    def id(self) -> int: ...
    @property
    def epoch(self) -> int: ...
    @property
    def runtime(self) -> Runtime: ...
    def is_valid(self) -> bool: ...
    def renew(self, lease: Optional[Duration] = None) -> None: ...
    def revoke(self) -> None: ...
    def release(self) -> None: ...
    def every(
        self,
        period: Duration,
        handler: Handler,
        *,
        key: Optional[Hashable] = None,
        policy: Union[OverrunPolicy, int] = OverrunPolicy.SKIP_LATE_TICKS,
        max_catch_up_ticks: int = 1,
        first_due: Optional[Duration] = None,
        on_release: Optional[Callable[[], object]] = None,
    ) -> Timer: ...
    def after(
        self,
        delay: Duration,
        handler: Handler,
        *,
        key: Optional[Hashable] = None,
        on_release: Optional[Callable[[], object]] = None,
    ) -> Timer: ...
    def enter_gate(self, timeout: Optional[Duration] = None) -> bool: ...
    def leave_gate(self) -> None: ...

@final
class Timer:
    """The handle of one timer generation; made by ``Owner.every()``/``Owner.after()``."""
    @property
    def key(self) -> Hashable: ...
    @property
    def owner_id(self) -> int: ...
    @property
    def runtime(self) -> Runtime: ...
    @property
    def is_live(self) -> bool: ...
    def result(self) -> Optional[EndReason]: ...
    def stats(self) -> TimerStats: ...
    def cancel(self, timeout: Optional[Duration] = None) -> Optional[EndReason]: ...
    def cancel_nowait(self) -> concurrent.futures.Future[EndReason]: ...
    async def cancel_async(self) -> EndReason: ...
