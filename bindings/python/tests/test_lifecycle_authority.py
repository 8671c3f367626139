"""A node keeps itself alive and answers truthfully, from Python (spot_timer.lifecycle)
only, with the meaning of lifecycle/tests/node_authority.rs: it renews its own owner lease
and runs its own idle scans; a node whose term in the store ended admits nothing of it and
gives its Spots up; an intent meeting a closing Spot waits for the close and creates again;
refusals name what refused and are counted once; an oversized first message creates
nothing; a node reported down is not sent to over an old route. Real clocks."""
import threading
import time

import pytest

from spot_timer import lifecycle as lc


class World:
    def __init__(self):
        self.store = lc.Store()
        self.lock = threading.Lock()
        self.factory_runs = 0
        self.closes = []
        self.nodes = []

    def factory(self, spot_id, kind):
        with self.lock:
            self.factory_runs += 1

    def on_close(self, spot_id, kind, reason):
        with self.lock:
            self.closes.append((spot_id, reason))

    def node(self, node_id, **kw):
        kw.setdefault("factory", self.factory)
        kw.setdefault("on_close", self.on_close)
        n = lc.Node(node_id, 1000 + node_id, self.store, **kw)
        self.nodes.append(n)
        return n

    def closes_of(self, spot_id):
        with self.lock:
            return [r for s, r in self.closes if s == spot_id]


class Dispatcher:
    """A host thread: dispatches for ever, recording (spot, payload) of every message."""

    def __init__(self, node):
        self.node = node
        self.ran = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.is_set():
            try:
                self.node.dispatch(self._handle, timeout=0.005)
            except lc.NodeClosedError:
                return

    def _handle(self, record):
        if record.kind == "message":
            self.ran.append((record.spot_id, record.payload))

    def close(self):
        self.stop.set()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "the dispatcher did not stop"


def eventually(cond, limit=10.0):
    until = time.monotonic() + limit
    while time.monotonic() < until:
        if cond():
            return True
        time.sleep(0.002)
    return cond()


@pytest.fixture
def w():
    world = World()
    yield world
    for n in world.nodes:
        n.shutdown()


def test_a_node_renews_its_own_owner_lease(w):
    a = w.node(1, owner_lease=0.3)
    d = Dispatcher(a)
    try:
        a.create_user_spot(2)
        a.send_or_create(3, b"first")
        for i in range(4):
            time.sleep(0.2)
            a.send(a.entry_spot, bytes([i]))
            a.send(2, bytes([i]))
            a.send_or_create(3, bytes([i]))
        assert eventually(lambda: len(d.ran) == 1 + 3 * 4), d.ran
        s = a.stats()
        assert s.authority_lost == 0, s
        assert s.factory_runs == 3
    finally:
        d.close()


def test_a_node_runs_its_own_idle_scans(w):
    a = w.node(1, instance_idle_timeout=0.2)
    d = Dispatcher(a)
    try:
        for i in range(50):
            a.send_or_create(100 + i, b"x")
        a.create_user_spot(7)
        assert eventually(lambda: a.stats().evicted == 50), a.stats()
        s = a.stats()
        assert s.eviction_passes > 0
        assert s.active_spots == 2, "the Entry and the User Spot stay"
        assert a.spot_kind(7) is lc.SpotKind.USER
        assert {r for _, r in w.closes} == {lc.CloseReason.IDLE_EVICTED}
    finally:
        d.close()


def test_an_expired_node_admits_nothing_and_its_spot_runs_on_one_node_only(w):
    n5, n6, n7 = w.node(5), w.node(6), w.node(7)
    d5, d6, d7 = Dispatcher(n5), Dispatcher(n6), Dispatcher(n7)
    try:
        y = 42
        n6.send_or_create(y, b"on 6")
        n7.send(y, b"via 7")  # node 7 caches its route to node 6
        assert eventually(lambda: len(d6.ran) == 2)
        w.store.expire_node(6)
        n5.send_or_create(y, b"on 5")
        for send in (lambda: n7.send(y, b"old route"), lambda: n6.send(y, b"on 6 again")):
            try:
                send()
            except (lc.StaleRouteError, lc.UnavailableError):
                pass
        assert eventually(lambda: n6.stats().terms_renewed == 1)
        time.sleep(0.05)
        assert len(d6.ran) == 2, d6.ran
        assert (y, b"on 5") in d5.ran
        assert w.closes_of(y) == [lc.CloseReason.AUTHORITY_LOST]
        n6.send(y, b"after")
        assert eventually(lambda: (y, b"after") in d5.ran)
        assert w.store.location(y).node_id == 5
    finally:
        for d in (d5, d6, d7):
            d.close()


def test_an_intent_during_a_closing_callback_waits_and_creates_again(w):
    entered = threading.Event()
    inner = []
    holder = {}

    def on_close(spot_id, kind, reason):
        w.on_close(spot_id, kind, reason)
        if spot_id == 7 and not entered.is_set():
            # This thread's own intent for the closing Spot is refused at once.
            t = time.monotonic()
            try:
                holder["node"].send_or_create(7, b"inside")
                inner.append("ok")
            except lc.StaleRouteError as e:
                inner.append((e.reason, time.monotonic() - t))
            entered.set()
            time.sleep(0.1)

    a = w.node(1, instance_idle_timeout=0.05, on_close=on_close)
    holder["node"] = a
    d = Dispatcher(a)
    try:
        a.send_or_create(7, b"one")
        assert entered.wait(10)
        t = time.monotonic()
        a.send_or_create(7, b"two")
        assert time.monotonic() - t >= 0.05, "waited for the close"
        assert eventually(lambda: (7, b"two") in d.ran)
        assert w.factory_runs == 3
        assert inner[0][0] is lc.StaleReason.CLOSING, inner
        assert inner[0][1] < 1.0
    finally:
        d.close()


def test_refusals_while_sends_race_evictions_say_closing(w):
    a = w.node(1, instance_idle_timeout=0.001)
    d = Dispatcher(a)
    ids = 256
    for i in range(ids):
        a.send_or_create(i, b"x")
    wrong = []
    until = time.monotonic() + 60

    def sender(t):
        k = 0
        while (k < 1500 or a.stats().evicted < 200) and time.monotonic() < until:
            k += 1
            i = (k * 7 + t * 61) % ids
            try:
                if k % 3 == 0:
                    a.send_or_create(i, b"i")
                else:
                    a.send(i, b"s")
            except (lc.NotFoundError, lc.CapacityExceededError):
                pass  # true refusals (a full lane: the senders outrun the host)
            except lc.StaleRouteError as e:
                if e.reason is not lc.StaleReason.CLOSING:
                    wrong.append(repr(e))
            except Exception as e:  # noqa: BLE001 - every other refusal is the defect
                wrong.append(repr(e))
            if k % 64 == 0:
                a.evict_idle()

    threads = [threading.Thread(target=sender, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=90)
    assert time.monotonic() < until, "no progress within 60 s"
    assert not wrong, wrong[:5]
    assert eventually(
        lambda: a.stats().messages_admitted
        == a.stats().messages_completed + a.stats().messages_dropped
    )
    d.close()
    assert a.stats().evicted >= 200


def test_every_activation_refusal_a_caller_sees_is_counted(w):
    a = w.node(1, active_cap=1)
    refused = []
    barrier = threading.Barrier(8)

    def caller():
        for rnd in range(100):
            if rnd % 20 == 0:
                barrier.wait(timeout=30)
            try:
                a.send_or_create(rnd % 3, b"")
            except lc.CapacityExceededError as e:
                assert e.queue is lc.Queue.ACTIVATION
                refused.append(1)

    threads = [threading.Thread(target=caller) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(refused) == 800
    assert a.stats().rejected_activation == len(refused)


def test_an_oversized_first_message_creates_nothing(w):
    a = w.node(1)
    before = w.factory_runs
    with pytest.raises(lc.CapacityExceededError) as info:
        a.send_or_create(9, bytes((64 << 20) - 255))
    assert info.value.queue is lc.Queue.APPLICATION_LANE
    assert w.factory_runs == before, "the factory did not run"
    assert w.store.location(9) is None
    assert a.stats().rejected_application_lane == 1
    a.send_or_create(9, bytes((64 << 20) - 256))


def test_a_node_reported_down_is_not_sent_to_over_an_old_route(w):
    a, b = w.node(1), w.node(2)
    db = Dispatcher(b)
    try:
        b.send_or_create(5, b"on b")
        a.send(5, b"cached")
        assert eventually(lambda: len(db.ran) == 2)
        w.store.mark_down(2)
        admitted = b.stats().messages_admitted
        for call in (lambda: a.send(5, b"plain"), lambda: a.send_or_create(5, b"intent")):
            with pytest.raises(lc.UnavailableError) as info:
                call()
            assert info.value.may_have_run is False
            assert "did not run" in str(info.value)
        assert b.stats().messages_admitted == admitted
        assert w.factory_runs == 3
    finally:
        db.close()
