"""The Spot lifecycle (L1-L7 of docs/lifecycle.md): Spots of three kinds on nodes that
agree, through a Location Store, on where every Spot lives.

    store = lifecycle.Store()                     # embedded store + in-process cluster
    # or: lifecycle.Store.etcd("http://127.0.0.1:2379")  (nodes in several processes)
    node = lifecycle.Node(1, entry_spot=1001, store=store, factory=build)
    node.send_or_create(7, b"hello")              # the explicit intent creates Spot 7
    node.send(7, b"again")                        # an ordinary send never creates
    node.dispatch(lambda record: print(record))   # messages and ticks, one exchange

``Store``, ``Node`` and ``SpotRecord`` are the native classes of the ``spot-lifecycle``
crate; the enums, named tuples and ``NodeStats`` are defined here. Errors are the
``SpotTimerError`` subclasses of ``spot_timer`` (``NotFoundError``, ``StaleRouteError``,
``CapacityExceededError`` with ``.queue``, ``UnavailableError``, ``CreationFailedError``,
``WrongKindError``, ``InvalidKindError``, ``LocationStoreError``, ``StoreKindError``,
``NodeClosedError``, ...).
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from typing import Callable, Literal, NamedTuple, Optional

from . import _native
from ._native import (
    CapacityExceededError,
    CreationFailedError,
    InvalidKindError,
    LocationStoreError,
    NodeClosedError,
    NotFoundError,
    StaleRouteError,
    StoreKindError,
    UnavailableError,
    WrongKindError,
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

logger = logging.getLogger("spot_timer")


class SpotKind(enum.IntEnum):
    """The three kinds of Spot (L1); the numbers are the C ABI's (0 and others are refused)."""

    #: The node's own Spot: one per node, created when the node starts, never moves.
    ENTRY = 1
    #: Created only by ``Node.create_user_spot``; may move; never evicted.
    USER = 2
    #: Created by the first ``Node.send_or_create``; may move; evicted when idle.
    INSTANCE = 3


class CloseReason(enum.IntEnum):
    """Why a Spot closed (the closing callback's ``reason``). With ``IDLE_EVICTED``,
    ``CLOSED`` and ``NODE_SHUTDOWN`` the node still holds the Spot's authority: save its
    state there. With ``AUTHORITY_LOST`` and ``CREATION_FAILED`` it is not (or no longer)
    this node's: drop its object, save nothing."""

    IDLE_EVICTED = 0
    CLOSED = 1
    NODE_SHUTDOWN = 2
    #: The node's authority over it ended first (its term in the store, or its owner
    #: lease): another node may own it now.
    AUTHORITY_LOST = 3
    #: Its creation failed after the factory ran: it never became Ready.
    CREATION_FAILED = 4


class Lane(enum.IntEnum):
    """A Spot's two lanes (L6)."""

    #: Messages (``Node.send``) and timer ticks.
    APPLICATION = 0
    #: Lifecycle work (``Node.send_lifecycle``), served first.
    LIFECYCLE = 1


class Queue(enum.IntEnum):
    """The queue that refused an admission (``CapacityExceededError.queue``)."""

    APPLICATION_LANE = 0
    LIFECYCLE_LANE = 1
    #: The node's budget of pending payload bytes.
    NODE_INBOUND = 2
    #: The node's active-Spot cap (a new activation).
    ACTIVATION = 3


class StaleReason(enum.IntEnum):
    """Why a route was stale (``StaleRouteError.reason``, L4)."""

    NOT_OWNER = 0
    LEASE_EXPIRED = 1
    CLOSING = 2


class LaneLimits(NamedTuple):
    """A lane's two limits (``Node(application_lane=..., lifecycle_lane=...)``): both are
    always set, whichever would be passed first refuses."""

    items: int
    bytes: int


class LaneUse(NamedTuple):
    """What a lane holds now (``Node.lane_use``): each item counts its payload + 256 bytes."""

    items: int
    bytes: int


class RelocationTarget(NamedTuple):
    """One thing a draining node hands over (``Node.relocation_targets``, L2)."""

    #: ``"spot"`` (a User or Instance Spot) or ``"entry_actor"`` (an actor of the Entry Spot).
    what: Literal["spot", "entry_actor"]
    id: int
    #: The Spot's kind; None for an entry actor.
    kind: Optional[SpotKind]


class Location(NamedTuple):
    """The Location Store's record of one Spot (``Store.location``)."""

    node_id: int
    kind: SpotKind
    state: Literal["creating", "ready"]
    #: The object generation, bumped each time the id is created again.
    generation: int


@dataclass(frozen=True)
class NodeStats:
    """A node's counters. Once quiet: ``messages_admitted == messages_completed +
    messages_dropped``; refusals are counted per queue and were never admitted."""

    #: Gauge: Spots active on this node (the Entry Spot included).
    active_spots: int
    created: int
    factory_runs: int
    creation_failures: int
    evicted: int
    closed: int
    messages_admitted: int
    #: Messages whose handler ran (OK or FAILED).
    messages_completed: int
    #: Admitted messages that never ran (their Spot closed or its authority ended first).
    messages_dropped: int
    rejected_application_lane: int
    rejected_lifecycle_lane: int
    rejected_node_inbound: int
    rejected_activation: int
    stale_routes: int
    #: Timer ticks kept (deferred) because the application lane was full.
    ticks_deferred: int
    eviction_passes: int
    #: Spots examined by those passes (at most 64 per pass).
    eviction_examined: int
    #: Spots given up because the node's authority over them ended first
    #: (``CloseReason.AUTHORITY_LOST``).
    authority_lost: int
    #: Terms of authority the node took after its first (each after one ended).
    terms_renewed: int


#: The application lane's default limits: 1,024 items, 64 MiB.
APPLICATION_LANE_LIMITS = LaneLimits(*_native.LIFECYCLE_APPLICATION_LANE)
#: The lifecycle lane's default limits: 128 items, 4 MiB.
LIFECYCLE_LANE_LIMITS = LaneLimits(*_native.LIFECYCLE_LIFECYCLE_LANE)
#: The fixed cost of one work item in a lane's byte count.
ITEM_OVERHEAD_BYTES: int = _native.LIFECYCLE_ITEM_OVERHEAD_BYTES
#: The most Spots one idle-eviction pass examines.
SCAN_LIMIT: int = _native.LIFECYCLE_SCAN_LIMIT

#: A Location Store (native): ``Store()`` is the embedded one with its in-process cluster;
#: ``Store.etcd(endpoints, prefix=..., lease_ttl=...)`` the etcd one (``spot-lifecycle-etcd``),
#: for nodes in several processes.
Store = _native.Store
#: One node of the lifecycle (native).
Node = _native.Node
#: One piece of Spot work handed to ``Node.dispatch``'s handler (native).
SpotRecord = _native.SpotRecord

#: ``factory(spot_id, kind)``: builds a Spot's object; raising fails the creation.
Factory = Callable[[int, SpotKind], object]
#: ``on_close(spot_id, kind, reason)``: told once when a Spot closes, before its location
#: is released.
ClosingCallback = Callable[[int, SpotKind, CloseReason], object]
#: ``handler(record)`` of ``Node.dispatch``.
RecordHandler = Callable[[SpotRecord], object]
#: ``exception_handler(exc, record)``: where a handler's exception goes (``record`` None
#: for an exception of the closing callback).
LifecycleExceptionHandler = Callable[[BaseException, Optional[SpotRecord]], object]


def _default_exception_handler(exc: BaseException, record: Optional[SpotRecord]) -> None:
    if record is None:
        logger.error("spot_timer.lifecycle closing callback raised", exc_info=exc)
    else:
        logger.error("spot_timer.lifecycle handler raised (%r)", record, exc_info=exc)
