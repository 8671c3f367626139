import enum
import logging
from dataclasses import dataclass
from typing import Callable, List, Literal, NamedTuple, Optional, Sequence, Tuple, Union, final

from . import Duration
from ._errors import (
    CapacityExceededError as CapacityExceededError,
    CreationFailedError as CreationFailedError,
    InvalidKindError as InvalidKindError,
    LocationStoreError as LocationStoreError,
    NodeClosedError as NodeClosedError,
    NotFoundError as NotFoundError,
    StaleRouteError as StaleRouteError,
    StoreKindError as StoreKindError,
    UnavailableError as UnavailableError,
    WrongKindError as WrongKindError,
)

__all__ = [
    "Store",
    "Node",
    "SpotRecord",
    "SpotKind",
    "CloseReason",
    "Lane",
    "Queue",
    "StaleReason",
    "LaneLimits",
    "LaneUse",
    "RelocationTarget",
    "Location",
    "NodeStats",
    "Factory",
    "ClosingCallback",
    "RecordHandler",
    "LifecycleExceptionHandler",
    "APPLICATION_LANE_LIMITS",
    "LIFECYCLE_LANE_LIMITS",
    "ITEM_OVERHEAD_BYTES",
    "SCAN_LIMIT",
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

class SpotKind(enum.IntEnum):
    ENTRY = 1
    USER = 2
    INSTANCE = 3

class CloseReason(enum.IntEnum):
    IDLE_EVICTED = 0
    CLOSED = 1
    NODE_SHUTDOWN = 2
    AUTHORITY_LOST = 3
    CREATION_FAILED = 4

class Lane(enum.IntEnum):
    APPLICATION = 0
    LIFECYCLE = 1

class Queue(enum.IntEnum):
    APPLICATION_LANE = 0
    LIFECYCLE_LANE = 1
    NODE_INBOUND = 2
    ACTIVATION = 3

class StaleReason(enum.IntEnum):
    NOT_OWNER = 0
    LEASE_EXPIRED = 1
    CLOSING = 2

class LaneLimits(NamedTuple):
    items: int
    bytes: int

class LaneUse(NamedTuple):
    items: int
    bytes: int

class RelocationTarget(NamedTuple):
    what: Literal["spot", "entry_actor"]
    id: int
    kind: Optional[SpotKind]

class Location(NamedTuple):
    node_id: int
    kind: SpotKind
    state: Literal["creating", "ready"]
    generation: int

@dataclass(frozen=True)
class NodeStats:
    active_spots: int
    created: int
    factory_runs: int
    creation_failures: int
    evicted: int
    closed: int
    messages_admitted: int
    messages_completed: int
    messages_dropped: int
    rejected_application_lane: int
    rejected_lifecycle_lane: int
    rejected_node_inbound: int
    rejected_activation: int
    stale_routes: int
    ticks_deferred: int
    eviction_passes: int
    eviction_examined: int
    authority_lost: int
    terms_renewed: int
    def __init__(
        self,
        active_spots: int,
        created: int,
        factory_runs: int,
        creation_failures: int,
        evicted: int,
        closed: int,
        messages_admitted: int,
        messages_completed: int,
        messages_dropped: int,
        rejected_application_lane: int,
        rejected_lifecycle_lane: int,
        rejected_node_inbound: int,
        rejected_activation: int,
        stale_routes: int,
        ticks_deferred: int,
        eviction_passes: int,
        eviction_examined: int,
        authority_lost: int,
        terms_renewed: int,
    ) -> None: ...

APPLICATION_LANE_LIMITS: LaneLimits
LIFECYCLE_LANE_LIMITS: LaneLimits
ITEM_OVERHEAD_BYTES: int
SCAN_LIMIT: int

_Payload = Union[bytes, bytearray, memoryview]

@final
class SpotRecord:
    """One piece of Spot work handed to ``Node.dispatch``'s handler: a message or a tick."""
    @property
    def spot_id(self) -> int: ...
    @property
    def kind(self) -> Literal["message", "tick"]: ...
    @property
    def lane(self) -> Lane: ...
    @property
    def payload(self) -> Optional[bytes]: ...
    @property
    def key(self) -> Optional[int]: ...
    @property
    def value(self) -> Optional[int]: ...

Factory = Callable[[int, SpotKind], object]
ClosingCallback = Callable[[int, SpotKind, CloseReason], object]
RecordHandler = Callable[[SpotRecord], object]
LifecycleExceptionHandler = Callable[[BaseException, Optional[SpotRecord]], object]

@final
class Store:
    """A Location Store: ``Store()`` is the embedded one with its in-process cluster;
    ``Store.etcd(endpoints)`` the etcd one, for nodes in several processes."""
    def __new__(cls) -> Store: ...
    @staticmethod
    def etcd(
        endpoints: Union[str, Sequence[str]],
        *,
        prefix: str = "/spot-timer/",
        lease_ttl: Duration = 10.0,
        connect_timeout: Duration = 5.0,
        request_timeout: Duration = 5.0,
    ) -> Store: ...
    @property
    def kind(self) -> Literal["embedded", "etcd"]: ...
    @property
    def requests(self) -> int: ...
    def mark_down(self, node_id: int) -> None: ...
    def expire_node(self, node_id: int) -> None: ...
    def location(self, spot_id: int) -> Optional[Location]: ...
    def node_status(self, node_id: int) -> Literal["alive", "down", "gone"]: ...
    def __len__(self) -> int: ...
    def __bool__(self) -> bool: ...

@final
class Node:
    """One node of the Spot lifecycle: its Spots, their lanes, one timer runtime."""
    def __new__(
        cls,
        node_id: int,
        entry_spot: int,
        store: Optional[Store] = None,
        *,
        manual_clock: bool = False,
        application_lane: Tuple[int, int] = (1024, 67108864),
        lifecycle_lane: Tuple[int, int] = (128, 4194304),
        node_inbound_bytes: int = 1073741824,
        active_cap: int = 100000,
        instance_idle_timeout: Optional[Duration] = 900.0,
        creation_wait: Duration = 5.0,
        owner_lease: Optional[Duration] = None,
        factory: Optional[Factory] = None,
        on_close: Optional[ClosingCallback] = None,
        exception_handler: Optional[LifecycleExceptionHandler] = None,
        listen: Optional[str] = None,
    ) -> Node: ...
    @property
    def node_id(self) -> int: ...
    @property
    def entry_spot(self) -> int: ...
    @property
    def store(self) -> Store: ...
    @property
    def closed(self) -> bool: ...
    @property
    def manual_clock(self) -> bool: ...
    @property
    def address(self) -> Optional[str]: ...
    def send(self, spot_id: int, payload: _Payload) -> None: ...
    def send_lifecycle(self, spot_id: int, payload: _Payload) -> None: ...
    def send_or_create(self, spot_id: int, payload: _Payload) -> int: ...
    def create_user_spot(self, spot_id: int) -> int: ...
    def spot_kind(self, spot_id: int) -> SpotKind: ...
    def close_spot(self, spot_id: int, kind: Union[SpotKind, int]) -> bool: ...
    def every(self, spot_id: int, key: int, period: Duration, value: int = 0) -> None: ...
    def evict_idle(self) -> int: ...
    def advance(self, by: Duration) -> None: ...
    def now(self) -> float: ...
    def relocation_targets(self) -> List[RelocationTarget]: ...
    def add_entry_actor(self, actor_id: int) -> None: ...
    def remove_entry_actor(self, actor_id: int) -> None: ...
    def lane_use(self, spot_id: int, lane: Union[Lane, int] = 0) -> LaneUse: ...
    def stats(self) -> NodeStats: ...
    def metrics(self) -> List[Tuple[str, str, int]]: ...
    def prometheus(self, prefix: str = "spot_node") -> str: ...
    def dispatch(
        self, handler: RecordHandler, timeout: Optional[Duration] = 0, max_records: int = 4096
    ) -> int: ...
    def shutdown(self) -> None: ...
    def __enter__(self) -> Node: ...
    def __exit__(self, *_exc: object) -> None: ...
