"""The Spot lifecycle from Python (spot_timer.lifecycle): the verification items L01-L16 of
docs/lifecycle.md, with the meaning of the Rust tests in lifecycle/tests/lifecycle.rs, plus
bad input, exceptions and the binding's own rules (GIL released while waiting, callbacks
attached only for the call, nothing outstanding after dispatch)."""
import gc
import logging
import threading
import time
import weakref

import pytest

import spot_timer as st
from spot_timer import lifecycle as lc

S = 7
ENTRY, USER, INSTANCE = lc.SpotKind.ENTRY, lc.SpotKind.USER, lc.SpotKind.INSTANCE


class World:
    """Nodes on manual clocks sharing one store, a counting factory and a closing callback
    that records whether the Spot's location was still in the store when it ran (as
    lifecycle/tests/common/mod.rs)."""

    def __init__(self):
        self.store = lc.Store()
        self.lock = threading.Lock()
        self.factory_runs = 0
        self.runs_of = {}  # factory runs per Spot id
        self.closes = []
        self.nodes = []

    def factory(self, spot_id, kind):
        with self.lock:
            self.factory_runs += 1
            self.runs_of[spot_id] = self.runs_of.get(spot_id, 0) + 1

    def on_close(self, spot_id, kind, reason):
        located = self.store.location(spot_id) is not None
        self.closes.append((spot_id, kind, reason, located))

    def node(self, node_id, **kw):
        kw.setdefault("factory", self.factory)
        kw.setdefault("on_close", self.on_close)
        kw.setdefault("manual_clock", True)
        n = lc.Node(node_id, 1000 + node_id, self.store, **kw)
        self.nodes.append(n)
        return n

    def shutdown(self):
        for n in self.nodes:
            n.shutdown()


@pytest.fixture
def w():
    world = World()
    yield world
    world.shutdown()


def ran_of(record):
    if record.kind == "message":
        return ("message", record.spot_id, record.payload)
    return ("tick", record.spot_id, record.key)


def run_ready(node):
    """Runs every ready record (OK) until none is left; what the handler saw."""
    ran = []
    while node.dispatch(lambda r: ran.append(ran_of(r))):
        pass
    return ran


def messages_for(ran, spot_id):
    return sum(1 for r in ran if r[0] == "message" and r[1] == spot_id)


def msg(spot_id, payload):
    return ("message", spot_id, payload)


# ---- Kinds and creation ---------------------------------------------------------------


def test_lifecycle_l01_the_entry_spot_is_not_relocated_its_actors_are(w):
    node = w.node(1)
    node.add_entry_actor(501)
    node.add_entry_actor(502)
    node.create_user_spot(20)
    node.send_or_create(30, b"hi")
    targets = node.relocation_targets()
    assert ("spot", node.entry_spot, ENTRY) not in targets
    for t in [
        ("entry_actor", 501, None),
        ("entry_actor", 502, None),
        ("spot", 20, USER),
        ("spot", 30, INSTANCE),
    ]:
        assert t in targets, (t, targets)
    assert len(targets) == 4
    assert all(isinstance(t, lc.RelocationTarget) for t in targets)
    # The kinds are distinct: an id of one kind is refused where another is asked for.
    with pytest.raises(lc.WrongKindError) as info:
        node.close_spot(30, USER)
    assert (info.value.expected, info.value.actual, info.value.spot_id) == (USER, INSTANCE, 30)
    # The Entry Spot closes only with its node.
    with pytest.raises(lc.WrongKindError, match="Entry"):
        node.close_spot(node.entry_spot, ENTRY)
    for bad in (0, 4):
        with pytest.raises(lc.InvalidKindError, match=f"invalid spot kind {bad}"):
            node.close_spot(30, bad)
    assert node.spot_kind(30) is INSTANCE
    assert node.spot_kind(node.entry_spot) is ENTRY
    assert (lc.SpotKind(1), lc.SpotKind(2), lc.SpotKind(3)) == (ENTRY, USER, INSTANCE)


def test_lifecycle_l02_an_ordinary_message_to_a_missing_id_creates_nothing(w):
    node = w.node(1)
    runs_at_start = w.factory_runs  # the Entry Spot's
    with pytest.raises(lc.NotFoundError) as info:
        node.send(S, b"x")
    assert info.value.spot_id == S
    assert isinstance(info.value, LookupError)
    with pytest.raises(lc.NotFoundError):
        node.spot_kind(S)
    assert w.factory_runs == runs_at_start, "no factory ran"
    assert w.store.location(S) is None, "nothing in the store"
    assert node.stats().active_spots == 1, "only the Entry Spot"
    # The explicit intent creates.
    node.send_or_create(S, b"hello")
    assert w.factory_runs == runs_at_start + 1
    assert node.spot_kind(S) is INSTANCE
    assert run_ready(node) == [msg(S, b"hello")]
    # And an ordinary message now reaches it.
    node.send(S, b"again")
    assert run_ready(node) == [msg(S, b"again")]


# ---- Concurrent creation ----------------------------------------------------------------


def test_lifecycle_l03_concurrent_creation_runs_the_factory_once(w):
    runs = []

    def factory(spot_id, kind):
        if spot_id == S:
            runs.append(threading.get_ident())
            time.sleep(0.03)  # let the others pile up

    node = w.node(1, factory=factory)
    # A second node racing too: the store's reservation decides across nodes.
    other = w.node(2, factory=factory)
    n_threads = 16
    barrier = threading.Barrier(n_threads)
    gens = [None] * n_threads
    errors = []

    def caller(i):
        n = node if i % 2 == 0 else other
        barrier.wait()
        try:
            gens[i] = n.send_or_create(S, bytes([i]))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    assert len(runs) == 1, "the factory ran once"
    assert len(set(gens)) == 1 and gens[0] is not None, f"one Spot: {gens}"
    owner = w.store.location(S).node_id
    owner_node = node if owner == node.node_id else other
    ran = run_ready(owner_node)
    assert messages_for(ran, S) == n_threads, "every caller's message ran on the one Spot"
    assert sorted(r[2][0] for r in ran) == list(range(n_threads))


def test_lifecycle_l04_a_message_right_after_creation_is_processed_at_once(w):
    a = w.node(1, factory=lambda spot_id, kind: time.sleep(0.1))
    b = w.node(2)
    creator = threading.Thread(target=a.send_or_create, args=(S, b"first"))
    creator.start()
    # Node B sends while the Spot is Creating: it waits for that creation (Creating is
    # never cached as a route) and is admitted as soon as Ready is committed.
    while w.store.location(S) is None:
        time.sleep(0)
    t0 = time.monotonic()
    b.send(S, b"second")
    waited = time.monotonic() - t0
    creator.join(10)
    assert waited < 2.0, f"no cache lifetime: {waited}"
    assert run_ready(a) == [msg(S, b"first"), msg(S, b"second")]


def test_lifecycle_l05_unavailable_starts_no_creation(w):
    a = w.node(1)
    b = w.node(2)
    b.send_or_create(S, b"on b")
    # (The runs of S's factory: node b, its term ended, creates its own Entry Spot again.)
    runs = w.runs_of[S]
    w.store.mark_down(b.node_id)
    assert w.store.node_status(b.node_id) == "down"
    # The authority exists, its owner is down: the request ends, nothing is created.
    with pytest.raises(lc.UnavailableError) as info:
        a.send_or_create(S, b"x")
    assert info.value.spot_id == S
    assert "down" in str(info.value)
    with pytest.raises(lc.UnavailableError):
        a.send(S, b"x")
    assert w.runs_of[S] == runs, "no creation started"
    # Once the owner's lease is over its authority is released: now the intent creates.
    w.store.expire_node(b.node_id)
    a.send_or_create(S, b"on a")
    assert w.runs_of[S] == runs + 1
    assert run_ready(a) == [msg(S, b"on a")]


# ---- Stale owners -----------------------------------------------------------------------


def test_lifecycle_l06_messages_are_not_rejected_for_a_new_object_generation(w):
    a = w.node(1)
    b = w.node(2)
    first = a.send_or_create(S, b"1")
    b.send(S, b"2")  # B caches a route to A
    assert messages_for(run_ready(a), S) == 2
    assert a.close_spot(S, INSTANCE) is True
    second = a.send_or_create(S, b"3")
    assert second > first, "re-created"
    assert w.store.location(S).generation == second
    # Right after the re-creation: ordinary messages, also over B's older route, run.
    a.send(S, b"4")
    b.send(S, b"5")
    ran = run_ready(a)
    assert messages_for(ran, S) == 3, ran


def test_lifecycle_l07_a_stale_route_ends_with_stale_route_and_is_not_retried(w):
    a = w.node(1)
    b = w.node(2)
    c = w.node(3)
    b.send_or_create(S, b"b")
    a.send(S, b"cache")  # A caches the route to B
    assert messages_for(run_ready(b), S) == 2
    # S moves: closed on B, created again on C.
    b.close_spot(S, INSTANCE)
    c.send_or_create(S, b"c")
    stale_before = a.stats().stale_routes
    with pytest.raises(lc.StaleRouteError) as info:
        a.send(S, b"stale")
    assert info.value.spot_id == S
    assert info.value.reason is lc.StaleReason.NOT_OWNER
    assert a.stats().stale_routes == stale_before + 1
    # The handler ran zero times for it, anywhere: no automatic retry.
    assert run_ready(b) == []
    assert run_ready(c) == [msg(S, b"c")]
    # A new call by the application finds the current owner.
    a.send(S, b"new call")
    assert run_ready(c) == [msg(S, b"new call")]


def test_lifecycle_l07_an_owner_whose_lease_ran_out_refuses_with_stale_route(w):
    a = w.node(1, owner_lease=0.05)
    a.send_or_create(S, b"x")
    assert messages_for(run_ready(a), S) == 1
    a.advance(0.1)
    # Refused as a stale route, or -- once the node's lease keeper has given the Spot up,
    # which it does on its own thread at any moment after the advance -- not found.
    with pytest.raises((lc.StaleRouteError, lc.NotFoundError)) as info:
        a.send(S, b"late")
    if isinstance(info.value, lc.StaleRouteError):
        assert info.value.reason is lc.StaleReason.LEASE_EXPIRED
    assert run_ready(a) == [], "nothing ran"


# ---- Active cap and idle eviction -------------------------------------------------------


def test_lifecycle_l08_at_the_active_cap_a_new_activation_is_rejected(w):
    a = w.node(1, active_cap=3)  # the Entry Spot and two more
    a.send_or_create(1, b"")
    a.create_user_spot(2)
    with pytest.raises(lc.CapacityExceededError) as info:
        a.send_or_create(3, b"")
    assert info.value.queue is lc.Queue.ACTIVATION
    assert "activation" in str(info.value)
    assert a.stats().rejected_activation == 1
    assert w.store.location(3) is None, "nothing reserved"
    # Placement: with another node below its cap, the new Spot is placed there.
    b = w.node(2)
    a.send_or_create(3, b"placed")
    assert w.store.location(3).node_id == b.node_id
    assert run_ready(b) == [msg(3, b"placed")]


def test_lifecycle_l09_only_instance_spots_are_evicted(w):
    node = w.node(1, instance_idle_timeout=10)
    node.create_user_spot(20)
    node.send_or_create(30, b"x")
    run_ready(node)
    node.advance(20)
    assert node.evict_idle() == 1
    with pytest.raises(lc.NotFoundError):
        node.spot_kind(30)
    assert node.spot_kind(20) is USER, "User Spots are never evicted"
    assert node.spot_kind(node.entry_spot) is ENTRY, "the Entry Spot stays"
    assert node.stats().evicted == 1
    assert node.stats().active_spots == 2


def test_lifecycle_l10_a_spot_with_work_in_progress_is_not_evicted(w):
    node = w.node(1, instance_idle_timeout=10)
    node.send_or_create(S, b"running")
    seen = {}

    def handler(record):
        # The record is begun and its handler runs: work in progress, and more queued.
        assert record.payload == b"running"
        node.send(S, b"queued")
        node.advance(30)
        seen["evicted_while_running"] = node.evict_idle()

    assert node.dispatch(handler) == 1
    assert seen["evicted_while_running"] == 0, "running and queued work"
    # The handler finished; the queued message runs; the Spot is idle only from then on.
    assert run_ready(node) == [msg(S, b"queued")]
    assert node.evict_idle() == 0, "its last work finished just now"
    node.advance(11)
    assert node.evict_idle() == 1


def test_lifecycle_l11_eviction_calls_the_closing_callback_before_releasing_the_location(w):
    node = w.node(1, instance_idle_timeout=10)
    node.send_or_create(S, b"x")
    run_ready(node)
    node.advance(10)
    assert node.evict_idle() == 1
    assert w.closes == [(S, INSTANCE, lc.CloseReason.IDLE_EVICTED, True)], (
        "called once, while the location was still recorded"
    )
    assert w.store.location(S) is None, "released afterwards"
    # Missing again: only an explicit intent creates it again.
    with pytest.raises(lc.NotFoundError):
        node.send(S, b"y")


def test_lifecycle_eviction_examines_at_most_64_spots_per_pass(w):
    node = w.node(1, instance_idle_timeout=1)
    for i in range(200):
        node.send_or_create(10_000 + i, b"")
    run_ready(node)
    node.advance(2)
    passes = 0
    while node.stats().evicted < 200:
        before = node.stats().eviction_examined
        assert node.evict_idle() <= lc.SCAN_LIMIT
        assert node.stats().eviction_examined - before <= lc.SCAN_LIMIT
        passes += 1
        assert passes < 10, "the cursor covers every Spot"
    assert passes == 4, "200 Spots, 64 per pass"
    assert lc.SCAN_LIMIT == 64


# ---- Execution lanes --------------------------------------------------------------------


def lane_node(w, items, nbytes):
    node = w.node(1, application_lane=(items, nbytes))
    node.create_user_spot(S)
    return node


def test_lifecycle_l12_a_lane_is_limited_by_count_and_bytes_whichever_comes_first(w):
    node = lane_node(w, 4, 2000)
    # Count first: four 10-byte messages (4 x 266 = 1064 bytes).
    for _ in range(4):
        node.send(S, bytes(10))
    with pytest.raises(lc.CapacityExceededError) as info:
        node.send(S, bytes(10))
    assert info.value.queue is lc.Queue.APPLICATION_LANE
    assert node.lane_use(S, lc.Lane.APPLICATION) == (4, 1064)
    # Completing returns the reservation.
    assert messages_for(run_ready(node), S) == 4
    assert node.lane_use(S) == lc.LaneUse(0, 0)
    # Bytes first: 1,000 + 256 fits once, not twice.
    node.send(S, bytes(1000))
    with pytest.raises(lc.CapacityExceededError) as info:
        node.send(S, bytes(1000))
    assert info.value.queue is lc.Queue.APPLICATION_LANE
    assert node.stats().rejected_application_lane == 2


def test_lifecycle_l13_large_payloads_hit_the_byte_limit_first(w):
    node = lane_node(w, 1024, 64 << 10)
    for _ in range(3):
        node.send(S, bytes(16 << 10))
    with pytest.raises(lc.CapacityExceededError) as info:
        node.send(S, bytes(16 << 10))
    assert info.value.queue is lc.Queue.APPLICATION_LANE
    assert node.lane_use(S).items == 3, "far below the count limit"


def test_lifecycle_l14_empty_payloads_hit_the_count_limit_first(w):
    node = lane_node(w, 8, 64 << 20)
    for _ in range(8):
        node.send(S, b"")
    with pytest.raises(lc.CapacityExceededError) as info:
        node.send(S, b"")
    assert info.value.queue is lc.Queue.APPLICATION_LANE
    assert node.lane_use(S) == (8, 8 * lc.ITEM_OVERHEAD_BYTES)


def test_lifecycle_l15_the_fixed_cost_per_item_is_counted(w):
    node = lane_node(w, 100, 1024)
    for _ in range(4):
        node.send(S, b"")
    # Four empty messages have used the 1,024-byte budget.
    with pytest.raises(lc.CapacityExceededError) as info:
        node.send(S, b"")
    assert info.value.queue is lc.Queue.APPLICATION_LANE
    assert node.lane_use(S).bytes == 1024
    assert lc.ITEM_OVERHEAD_BYTES == 256


def test_lifecycle_l16_every_lane_has_both_limits(w):
    for app, life in [
        ((0, 1 << 20), lc.LIFECYCLE_LANE_LIMITS),
        ((10, 0), lc.LIFECYCLE_LANE_LIMITS),
        (lc.APPLICATION_LANE_LIMITS, (0, 1 << 20)),
        (lc.APPLICATION_LANE_LIMITS, (10, 255)),
    ]:
        with pytest.raises(st.InvalidArgumentError, match="lane"):
            lc.Node(9, 1009, w.store, application_lane=app, lifecycle_lane=life)
    assert lc.APPLICATION_LANE_LIMITS == lc.LaneLimits(1024, 64 << 20)
    assert lc.LIFECYCLE_LANE_LIMITS == lc.LaneLimits(128, 4 << 20)
    # The lifecycle lane enforces its own limits and says so.
    node = w.node(1, lifecycle_lane=lc.LaneLimits(items=2, bytes=1 << 20))
    node.create_user_spot(S)
    node.send_lifecycle(S, b"a")
    node.send_lifecycle(S, b"b")
    with pytest.raises(lc.CapacityExceededError) as info:
        node.send_lifecycle(S, b"c")
    assert info.value.queue is lc.Queue.LIFECYCLE_LANE
    assert node.lane_use(S, lc.Lane.LIFECYCLE) == (2, 2 * (1 + 256))
    node.send(S, b"app")  # the application lane is separate
    # Lifecycle work is served first.
    lanes = []

    def handler(record):
        lanes.append(record.lane)

    ran = []
    while node.dispatch(lambda r: (ran.append(ran_of(r)), handler(r))):
        pass
    assert ran == [msg(S, b"a"), msg(S, b"b"), msg(S, b"app")]
    assert lanes == [lc.Lane.LIFECYCLE, lc.Lane.LIFECYCLE, lc.Lane.APPLICATION]


def test_the_node_inbound_budget_is_its_own_queue(w):
    node = w.node(1, node_inbound_bytes=1000)
    node.create_user_spot(1)
    node.create_user_spot(2)
    node.send(1, bytes(600))
    with pytest.raises(lc.CapacityExceededError) as info:
        node.send(2, bytes(600))
    assert info.value.queue is lc.Queue.NODE_INBOUND
    assert node.stats().rejected_node_inbound == 1
    run_ready(node)
    node.send(2, bytes(600))


# ---- Work: messages and ticks together --------------------------------------------------


def test_messages_and_ticks_share_one_dispatch_and_messages_keep_their_order(w):
    node = w.node(1)
    node.create_user_spot(S)
    node.every(S, 1, 0.01, 77)
    for i in range(100):
        node.send(S, bytes([i]))
    node.advance(0.01)
    records = []
    while node.dispatch(records.append):
        pass
    assert [r.payload[0] for r in records if r.kind == "message"] == list(range(100))
    ticks = [r for r in records if r.kind == "tick"]
    assert [(t.spot_id, t.key, t.value, t.payload) for t in ticks] == [(S, 1, 77, None)]
    assert all(r.key is None and r.value is None for r in records if r.kind == "message")
    s = node.stats()
    assert (s.messages_admitted, s.messages_completed, s.messages_dropped) == (100, 100, 0)
    with pytest.raises(st.InvalidArgumentError, match="reserved"):
        node.every(S, 1 << 63, 0.01)


def test_closing_drops_queued_messages_and_counts_them(w):
    node = w.node(1)
    node.create_user_spot(S)
    for _ in range(5):
        node.send(S, b"m")
    assert node.close_spot(S, USER) is True
    assert run_ready(node) == []
    s = node.stats()
    assert (s.messages_admitted, s.messages_completed, s.messages_dropped) == (5, 0, 5)
    assert w.closes[-1] == (S, USER, lc.CloseReason.CLOSED, True)
    with pytest.raises(lc.NotFoundError):
        node.send(S, b"m")


def test_a_failing_factory_releases_the_reservation(w):
    fail = [True]

    def factory(spot_id, kind):
        if spot_id == S and fail[0]:
            raise RuntimeError("no room")

    node = w.node(1, factory=factory)
    with pytest.raises(lc.CreationFailedError) as info:
        node.send_or_create(S, b"x")
    e = info.value
    assert e.spot_id == S
    assert e.message == "RuntimeError: no room"
    assert "no room" in str(e) and str(S) in str(e)
    assert isinstance(e.__cause__, RuntimeError), "the factory's exception is the cause"
    assert w.store.location(S) is None, "the reservation is released"
    assert node.stats().creation_failures == 1
    fail[0] = False
    node.send_or_create(S, b"y")
    assert run_ready(node) == [msg(S, b"y")]


def test_a_factory_failing_for_the_entry_spot_fails_the_node_start(w):
    def factory(spot_id, kind):
        raise ValueError(f"cannot build {kind.name}")

    with pytest.raises(lc.CreationFailedError, match="cannot build ENTRY"):
        lc.Node(1, 1001, w.store, factory=factory)
    # The id is free again and the store does not place Spots on the failed node.
    assert w.store.node_status(1) == "gone"
    node = w.node(1)
    node.send_or_create(S, b"ok")


def test_waiters_of_a_failed_creation_get_the_failure(w):
    started = threading.Event()

    def factory(spot_id, kind):
        if spot_id == S:
            started.set()
            time.sleep(0.1)
            raise KeyError("gone")

    node = w.node(1, factory=factory)
    results = []

    def creator():
        try:
            node.send_or_create(S, b"a")
        except lc.CreationFailedError as e:
            results.append(("creator", e.message, e.__cause__))

    t = threading.Thread(target=creator)
    t.start()
    started.wait(5)
    with pytest.raises(lc.CreationFailedError) as info:
        node.send_or_create(S, b"b")
    t.join(5)
    # The waiter gets the failure: from the attempt it joined, or (if it was waiting on the
    # store's Creating state) from its own attempt after the first one released the
    # reservation — then the exception it raised is its cause.
    assert info.value.message == "KeyError: 'gone'"
    assert info.value.__cause__ is None or isinstance(info.value.__cause__, KeyError)
    assert results and results[0][1] == "KeyError: 'gone'"
    assert isinstance(results[0][2], KeyError), "the creator's own exception is its cause"
    assert w.store.location(S) is None


# ---- Handlers, exceptions and threads ---------------------------------------------------


def test_a_handler_that_raises_fails_its_record_and_is_reported(w):
    reported = []
    node = w.node(1, exception_handler=lambda exc, rec: reported.append((exc, rec)))
    node.create_user_spot(S)
    node.send(S, b"boom")
    node.send(S, b"fine")
    seen = []

    def handler(record):
        seen.append(record.payload)
        if record.payload == b"boom":
            raise ValueError("bad message")

    while node.dispatch(handler):
        pass
    assert seen == [b"boom", b"fine"], "the next record runs after a failed one"
    assert len(reported) == 1
    exc, rec = reported[0]
    assert isinstance(exc, ValueError) and rec.payload == b"boom" and rec.spot_id == S
    s = node.stats()
    assert (s.messages_completed, s.messages_dropped) == (2, 0), "FAILED counts as completed"
    assert node.lane_use(S) == (0, 0), "nothing outstanding"


def test_the_default_exception_handler_logs(w, caplog):
    node = w.node(1)
    node.create_user_spot(S)
    node.send(S, b"x")
    with caplog.at_level(logging.ERROR, logger="spot_timer"):
        node.dispatch(lambda r: 1 / 0)
    assert any("handler raised" in r.getMessage() for r in caplog.records)
    assert any(r.exc_info and r.exc_info[0] is ZeroDivisionError for r in caplog.records)


def test_a_closing_callback_that_raises_is_reported_and_the_close_goes_on(w):
    reported = []

    def on_close(spot_id, kind, reason):
        raise RuntimeError("cannot save")

    node = w.node(1, on_close=on_close, exception_handler=lambda e, r: reported.append((e, r)))
    node.create_user_spot(S)
    assert node.close_spot(S, USER)
    assert len(reported) == 1 and isinstance(reported[0][0], RuntimeError)
    assert reported[0][1] is None
    assert w.store.location(S) is None


def test_keyboard_interrupt_in_a_handler_propagates_and_the_rest_of_the_batch_waits(w):
    node = w.node(1)
    for i in range(3):
        node.create_user_spot(100 + i)
        node.send(100 + i, bytes([i]))
    seen = []

    def handler(record):
        seen.append(record.spot_id)
        if len(seen) == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        node.dispatch(handler)
    assert len(seen) == 1
    # The other two were kept and run by the next dispatch, before anything new.
    assert node.dispatch(handler) == 2
    assert sorted(seen) == [100, 101, 102]
    assert node.stats().messages_completed == 3


def test_a_coroutine_handler_is_refused_and_reported(w):
    reported = []
    node = w.node(1, exception_handler=lambda e, r: reported.append(e))
    node.create_user_spot(S)
    node.send(S, b"x")

    async def handler(record):
        pass  # pragma: no cover - never awaited

    assert node.dispatch(handler) == 1
    assert isinstance(reported[0], st.ArgumentTypeError)
    assert "coroutine" in str(reported[0])


def test_dispatch_waits_detached_and_a_real_clock_node_delivers(w):
    node = lc.Node(1, 1001, w.store)  # real clock
    w.nodes.append(node)
    node.create_user_spot(S)
    got = []
    ready = threading.Event()

    def worker():
        ready.set()
        while not got:
            node.dispatch(lambda r: got.append(r.payload), timeout=5)

    t = threading.Thread(target=worker)
    t.start()
    ready.wait(5)
    time.sleep(0.05)  # the worker waits in dispatch(); this thread keeps running
    node.send(S, b"ping")
    t.join(10)
    assert got == [b"ping"]
    with pytest.raises(st.NotManualClockError):
        node.advance(1)


def test_shutdown_ends_a_dispatch_that_waits(w):
    node = lc.Node(1, 1001, w.store)
    outcome = []

    def worker():
        try:
            node.dispatch(lambda r: None, timeout=None)
        except lc.NodeClosedError as e:
            outcome.append(e)

    t = threading.Thread(target=worker)
    t.start()
    time.sleep(0.05)
    node.shutdown()
    t.join(10)
    assert not t.is_alive() and len(outcome) == 1


def test_a_handler_can_use_the_node_and_close_its_own_spot(w):
    node = w.node(1)
    node.create_user_spot(S)
    node.send(S, b"close me")
    node.send(S, b"dropped")

    ran = []

    def handler(record):
        ran.append(record.payload)
        assert node.close_spot(S, USER)

    # Both messages come in one burst; the second, of a Spot closed since, does not start.
    assert node.dispatch(handler) == 2
    assert ran == [b"close me"]
    assert run_ready(node) == []
    s = node.stats()
    assert (s.messages_admitted, s.messages_completed, s.messages_dropped) == (2, 1, 1)


def test_records_stay_valid_after_their_handler(w):
    node = w.node(1)
    node.create_user_spot(S)
    node.send(S, bytearray(b"kept"))
    node.send(S, memoryview(b"view"))
    records = []
    while node.dispatch(records.append):
        pass
    assert [r.payload for r in records] == [b"kept", b"view"]
    assert "kept" in repr(records[0])


# ---- Bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [0, 4, -1, 2**40])
def test_bad_input_an_invalid_kind_number_is_a_value_error(w, kind):
    node = w.node(1)
    node.create_user_spot(S)
    with pytest.raises(lc.InvalidKindError) as info:
        node.close_spot(S, kind)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, st.InvalidArgumentError)
    assert "1 = Entry, 2 = User, 3 = Instance" in str(info.value)


@pytest.mark.parametrize("kind", ["user", 2.0, None, True])
def test_bad_input_a_kind_of_the_wrong_type(w, kind):
    node = w.node(1)
    with pytest.raises(st.ArgumentTypeError, match="kind"):
        node.close_spot(S, kind)


def test_bad_input_wrong_kind(w):
    node = w.node(1)
    node.create_user_spot(20)
    node.send_or_create(30, b"")
    with pytest.raises(lc.WrongKindError) as info:
        node.send_or_create(20, b"")
    assert (info.value.expected, info.value.actual) == (INSTANCE, USER)
    with pytest.raises(lc.WrongKindError):
        node.create_user_spot(30)
    with pytest.raises(lc.WrongKindError):
        node.close_spot(20, INSTANCE)
    with pytest.raises(lc.WrongKindError):
        node.close_spot(node.entry_spot, ENTRY)
    # Over a route to another node too.
    other = w.node(2)
    with pytest.raises(lc.WrongKindError):
        other.send_or_create(20, b"")
    assert "20" in str(info.value) and "User" in str(info.value)


def test_bad_input_calls_after_shutdown_raise_node_closed(w):
    node = w.node(1)
    node.create_user_spot(S)
    node.shutdown()
    node.shutdown()  # idempotent
    assert node.closed
    calls = [
        lambda: node.send(S, b"x"),
        lambda: node.send_lifecycle(S, b"x"),
        lambda: node.send_or_create(9, b"x"),
        lambda: node.create_user_spot(10),
        lambda: node.close_spot(S, USER),
        lambda: node.every(S, 1, 1.0),
        lambda: node.evict_idle(),
        lambda: node.advance(1),
        lambda: node.lane_use(S),
        lambda: node.spot_kind(S),
        lambda: node.relocation_targets(),
        lambda: node.add_entry_actor(1),
        lambda: node.dispatch(lambda r: None),
    ]
    for call in calls:
        with pytest.raises(lc.NodeClosedError, match="shut down"):
            call()
    assert issubclass(lc.NodeClosedError, st.RuntimeClosedError)
    assert node.stats().active_spots == 0, "stats stay readable"
    assert any(c[0] == S and c[2] is lc.CloseReason.NODE_SHUTDOWN for c in w.closes)
    assert w.store.node_status(1) == "gone"


@pytest.mark.parametrize(
    "call,exc,word",
    [
        (lambda n: n.send(-1, b""), st.InvalidArgumentError, "spot_id"),
        (lambda n: n.send(2**64, b""), st.InvalidArgumentError, "spot_id"),
        (lambda n: n.send("7", b""), st.ArgumentTypeError, "spot_id"),
        (lambda n: n.send(True, b""), st.ArgumentTypeError, "spot_id"),
        (lambda n: n.send(S, "text"), st.ArgumentTypeError, "payload"),
        (lambda n: n.send(S, [1, 2]), st.ArgumentTypeError, "payload"),
        (lambda n: n.lane_use(S, 2), st.InvalidArgumentError, "lane"),
        (lambda n: n.lane_use(S, "application"), st.ArgumentTypeError, "lane"),
        (lambda n: n.every(S, 1, -1.0), st.InvalidDurationError, "period"),
        (lambda n: n.every(S, 1, 0), st.InvalidArgumentError, "period"),
        (lambda n: n.every(S, 1 << 63, 1.0), st.InvalidArgumentError, "key"),
        (lambda n: n.advance("1s"), st.ArgumentTypeError, "by"),
        (lambda n: n.dispatch(None), st.HandlerNotCallableError, "handler"),
        (lambda n: n.dispatch(print, timeout=-1), st.InvalidDurationError, "timeout"),
        (lambda n: n.dispatch(print, max_records=0), st.InvalidArgumentError, "max_records"),
    ],
)
def test_bad_input_arguments(w, call, exc, word):
    node = w.node(1)
    node.create_user_spot(S)
    with pytest.raises(exc) as info:
        call(node)
    assert word in str(info.value), str(info.value)
    assert isinstance(info.value, st.SpotTimerError)


@pytest.mark.parametrize(
    "kw,exc,word",
    [
        ({"application_lane": (10,)}, st.ArgumentTypeError, "application_lane"),
        ({"application_lane": "10,20"}, st.ArgumentTypeError, "application_lane"),
        ({"lifecycle_lane": (10, -1)}, st.InvalidArgumentError, "lifecycle_lane"),
        ({"active_cap": 0}, st.InvalidArgumentError, "active_cap"),
        ({"active_cap": 1.5}, st.ArgumentTypeError, "active_cap"),
        ({"node_inbound_bytes": -1}, st.InvalidArgumentError, "node_inbound_bytes"),
        ({"instance_idle_timeout": -1}, st.InvalidDurationError, "instance_idle_timeout"),
        ({"owner_lease": 0}, st.InvalidDurationError, "owner_lease"),
        ({"creation_wait": "5s"}, st.ArgumentTypeError, "creation_wait"),
        ({"factory": 3}, st.HandlerNotCallableError, "factory"),
        ({"on_close": "x"}, st.HandlerNotCallableError, "on_close"),
        ({"store": object()}, st.ArgumentTypeError, "store"),
        ({"manual_clock": "yes"}, st.ArgumentTypeError, "manual_clock"),
        ({"listen": 8080}, st.ArgumentTypeError, "listen"),
        ({"listen": b"127.0.0.1:0"}, st.ArgumentTypeError, "listen"),
        ({"listen": "localhost:0"}, st.InvalidArgumentError, 'listen "localhost:0" is not an address IP:PORT'),
        ({"listen": "127.0.0.1"}, st.InvalidArgumentError, 'listen "127.0.0.1" is not an address IP:PORT'),
        ({"listen": "127.0.0.1:70000"}, st.InvalidArgumentError, "is not an address IP:PORT"),
    ],
)
def test_bad_input_node_arguments(kw, exc, word):
    with pytest.raises(exc) as info:
        lc.Node(1, 1001, **kw)
    assert word in str(info.value), str(info.value)


def test_bad_input_node_ids_and_entry_spots(w):
    w.node(1)
    with pytest.raises(lc.LocationStoreError, match="node id 1 is already live"):
        lc.Node(1, 2001, w.store)
    # An Entry Spot id owned by another node.
    with pytest.raises(st.InvalidArgumentError, match="entry spot id 1001"):
        lc.Node(2, 1001, w.store)
    assert w.store.node_status(2) == "gone"


def test_every_error_has_a_readable_message(w):
    node = w.node(1, active_cap=2)
    node.create_user_spot(S)
    errors = []
    for call in [
        lambda: node.send(99, b""),
        lambda: node.send_or_create(98, b""),
        lambda: node.close_spot(S, INSTANCE),
        lambda: node.close_spot(S, 0),
        lambda: node.send(S, "x"),
    ]:
        with pytest.raises(st.SpotTimerError) as info:
            call()
        errors.append(info.value)
    for e in errors:
        text = str(e)
        assert text and "Error(" not in text and "LifecycleError" not in text, text


# ---- Lifetime -------------------------------------------------------------------------------


def test_a_node_nobody_references_shuts_down_and_is_collected():
    store = lc.Store()
    closes = []

    class App:
        def __init__(self):
            self.node = lc.Node(1, 1001, store, manual_clock=True, factory=self.build,
                                on_close=lambda *a: closes.append(a))

        def build(self, spot_id, kind):  # refers back to the node through self
            pass

    app = App()
    app.node.create_user_spot(S)
    ref = weakref.ref(app.node)
    del app
    gc.collect()
    assert ref() is None, "the cycle node -> factory -> app -> node was collected"
    assert store.location(S) is None and store.node_status(1) == "gone"
    # The collector took the callables first; a later node of the id starts afresh.
    lc.Node(1, 1001, store).shutdown()


def test_a_shut_down_node_is_not_chosen_for_placement(w):
    a = w.node(1, active_cap=1)  # full with its Entry Spot
    b = w.node(2)
    c = w.node(3)
    b.shutdown()
    for i in range(3):
        a.send_or_create(50 + i, b"")
        assert w.store.location(50 + i).node_id == c.node_id


def test_the_module_surface():
    assert lc.Store is st._native.Store
    assert lc.Node.__module__ == "spot_timer.lifecycle"
    for name in lc.__all__:
        assert hasattr(lc, name), name
    assert issubclass(lc.NotFoundError, LookupError)
    for cls in [lc.NotFoundError, lc.StaleRouteError, lc.CapacityExceededError,
                lc.UnavailableError, lc.CreationFailedError, lc.WrongKindError]:
        assert issubclass(cls, st.SpotTimerError)
        assert getattr(st, cls.__name__) is cls
    assert [int(k) for k in lc.SpotKind] == [1, 2, 3]


# ---- Listening for other processes' nodes -----------------------------------------------


def test_a_listening_node_tells_the_address_it_bound(w):
    node = w.node(1, listen="127.0.0.1:0")
    host, _, port = node.address.rpartition(":")
    assert host == "127.0.0.1" and 0 < int(port) < 65536, node.address
    # Not listening: None (the default, and the empty string).
    assert w.node(2).address is None
    assert w.node(3, listen=None).address is None
    assert w.node(4, listen="").address is None
    # The address is taken: a readable error naming it; nothing was started.
    with pytest.raises(st.InvalidArgumentError) as info:
        lc.Node(5, 1005, w.store, listen=node.address)
    assert f"cannot listen on {node.address}" in str(info.value), str(info.value)
    assert w.store.node_status(5) == "gone"
    # Nodes on one store are one in-process cluster: they reach each other without TCP,
    # and the message runs on the owner.
    node.send_or_create(S, b"made")
    w.nodes[1].send(S, b"local")
    assert run_ready(node) == [msg(S, b"made"), msg(S, b"local")]
