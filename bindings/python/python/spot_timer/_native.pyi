"""The native module (pyo3) that ``spot_timer`` wraps: ``Owner``, ``Timer`` and ``Tick`` are
re-exported by the package, ``Store``, ``Node`` and ``SpotRecord`` by ``spot_timer.lifecycle``;
the rest is the package's own plumbing."""

from typing import Any, Callable, Dict, List, Optional, Tuple, final

from . import Owner as Owner, Tick as Tick, Timer as Timer
from .lifecycle import Node as Node, SpotRecord as SpotRecord, Store as Store

__all__ = [
    "ManualClock",
    "Runtime",
    "Owner",
    "Timer",
    "Dispatcher",
    "Tick",
    "Kept",
    "Pass",
    "configure",
    "MODE_MANUAL",
    "MODE_THREAD",
    "MODE_ASYNCIO",
    "MAX_TIMERS",
    "END_REASONS",
    "CLOSE_REASONS",
    "Store",
    "Node",
    "SpotRecord",
    "LIFECYCLE_ITEM_OVERHEAD_BYTES",
    "LIFECYCLE_SCAN_LIMIT",
    "LIFECYCLE_APPLICATION_LANE",
    "LIFECYCLE_LIFECYCLE_LANE",
]

MODE_MANUAL: int
MODE_THREAD: int
MODE_ASYNCIO: int
MAX_TIMERS: int
#: The core's end reasons as (number, NAME): what ``EndReason`` mirrors.
END_REASONS: List[Tuple[int, str]]
#: The lifecycle's closing reasons as (number, NAME): what ``CloseReason`` mirrors.
CLOSE_REASONS: List[Tuple[int, str]]
LIFECYCLE_ITEM_OVERHEAD_BYTES: int
LIFECYCLE_SCAN_LIMIT: int
LIFECYCLE_APPLICATION_LANE: Tuple[int, int]
LIFECYCLE_LIFECYCLE_LANE: Tuple[int, int]

def configure(
    nanos: Callable[[object, str], int],
    end_reason: Callable[[int], Any],
    timer_stats: Callable[..., Any],
    done_future: Callable[[bool, Any], Any],
    cancel_async: Callable[[Any], Any],
) -> None: ...

@final
class ManualClock:
    def __new__(cls) -> ManualClock: ...
    def advance(self, ns: int) -> None: ...
    def now_ns(self) -> int: ...

@final
class Pass:
    @property
    def ran(self) -> int: ...
    @property
    def pending(self) -> int: ...
    @property
    def coroutines(self) -> List[Kept]: ...

_PumpResult = Optional[Pass]

@final
class Kept:
    @property
    def coro(self) -> Any: ...
    @property
    def tick(self) -> Tick: ...
    def complete(self, ok: bool) -> None: ...

@final
class Dispatcher:
    def pump(
        self,
        timeout_ns: Optional[int] = None,
        max_records: int = 8192,
        flush: bool = False,
        window_ns: int = 0,
        budget_ns: int = 0,
    ) -> _PumpResult: ...
    def is_closed(self) -> bool: ...

@final
class Runtime:
    def __new__(cls, clock: Optional[ManualClock] = None) -> Runtime: ...
    def attach_host(self, runtime_ref: Any) -> None: ...
    def set_mode(self, mode: int) -> None: ...
    def set_exception_handler(self, handler: Optional[Callable[[BaseException, Any], None]]) -> None: ...
    def acquire_owner(
        self, runtime: Any, owner_id: int, lease_ns: Optional[int] = None, concurrent: bool = False
    ) -> Owner: ...
    def next_key(self) -> int: ...
    def pump(
        self,
        timeout_ns: Optional[int] = None,
        max_records: int = 8192,
        flush: bool = False,
        window_ns: int = 0,
        budget_ns: int = 0,
    ) -> _PumpResult: ...
    def dispatcher(self) -> Dispatcher: ...
    def wakeup_fd(self) -> int: ...
    def sync(self) -> None: ...
    def now_ns(self) -> int: ...
    def is_closed(self) -> bool: ...
    def close(self) -> None: ...
    def stats(self) -> Dict[str, int]: ...
    def metrics(self) -> List[Tuple[str, str, int]]: ...
    def lateness(self) -> Tuple[List[Tuple[Optional[int], int]], int]: ...
    def prometheus(self, prefix: str) -> str: ...
    def held_objects(self) -> int: ...
    def owns(self, timer: Timer) -> bool: ...
