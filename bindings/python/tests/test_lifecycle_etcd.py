"""The etcd Location Store from Python (``lifecycle.Store.etcd``).

Without etcd: bad arguments are refused before any connect, an unreachable etcd is a
``LocationStoreError`` naming the endpoint within the connect timeout, and connecting does
not hold the interpreter. With etcd (``SPOT_ETCD_ENDPOINT``, set by
``tests/cluster/with-etcd.sh``; ``make test-cluster`` runs this file that way): two nodes
on two etcd stores, as two processes would have them — with the meaning of
lifecycle-etcd/tests/cluster.rs (one creation cluster-wide, a message for a Spot another
process owns ends with ``UnavailableError`` while that node lives and does not listen, no etcd request
on the steady-state send path) and of lifecycle/tests/transport.rs (a node started with
``listen`` is reached over TCP: messages sent from the other store's node run on it, and a
creation placed on it runs there with its first message).
"""
import os
import socket
import threading
import time
from collections import Counter

import pytest

import spot_timer as st
from spot_timer import lifecycle as lc

ENDPOINT = os.environ.get("SPOT_ETCD_ENDPOINT")
needs_etcd = pytest.mark.skipif(
    not ENDPOINT, reason="needs etcd: SPOT_ETCD_ENDPOINT (tests/cluster/with-etcd.sh)"
)


# ---- Without etcd ---------------------------------------------------------------------------


def test_an_unreachable_etcd_is_a_location_store_error_naming_it():
    started = time.monotonic()
    with pytest.raises(lc.LocationStoreError) as info:
        lc.Store.etcd("http://127.0.0.1:1", connect_timeout=1)
    took = time.monotonic() - started
    assert "127.0.0.1:1" in str(info.value) and "cannot be reached" in str(info.value)
    assert took < 3.0, f"refused after {took:.2f}s with a 1 s connect timeout"
    assert isinstance(info.value, st.SpotTimerError)


def test_connecting_does_not_hold_the_interpreter():
    # A listener that never answers: the TCP connect succeeds, etcd's handshake never
    # does, so the connect waits out its whole timeout.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        errors = []

        def connect():
            try:
                lc.Store.etcd([f"http://127.0.0.1:{port}"], connect_timeout=1.0)
            except lc.LocationStoreError as e:
                errors.append(e)

        t = threading.Thread(target=connect)
        started = time.monotonic()
        t.start()
        last, longest = time.monotonic(), 0.0
        while t.is_alive():
            now = time.monotonic()
            longest = max(longest, now - last)
            last = now
            sum(range(200))  # Python work, no blocking call that would drop the GIL
        t.join()
        took = time.monotonic() - started
    assert len(errors) == 1 and f"127.0.0.1:{port}" in str(errors[0])
    assert 0.8 < took < 3.0, took
    # A held interpreter would stop this thread for the whole 1 s; a busy machine only
    # for a scheduler slice or two.
    assert longest < 0.5, f"this thread stood still {longest:.2f}s while connecting"


@pytest.mark.parametrize(
    "args, kw, exc, words",
    [
        ([[]], {}, st.InvalidArgumentError, "at least one endpoint"),
        ([""], {}, st.InvalidArgumentError, "at least one endpoint"),
        (["127.0.0.1"], {}, st.InvalidArgumentError, "not host:port"),
        ([["http://127.0.0.1:2379", "http://"]], {}, st.InvalidArgumentError, "not host:port"),
        (["http://127.0.0.1:2379"], {"lease_ttl": 1}, st.InvalidArgumentError, "lease_ttl"),
        (["http://127.0.0.1:2379"], {"lease_ttl": 2.5}, st.InvalidArgumentError, "whole seconds"),
        (["http://127.0.0.1:2379"], {"lease_ttl": -1}, st.InvalidDurationError, "lease_ttl"),
        (["http://127.0.0.1:2379"], {"connect_timeout": 0}, st.InvalidArgumentError,
         "connect_timeout"),
        (["http://127.0.0.1:2379"], {"request_timeout": 0}, st.InvalidArgumentError,
         "request_timeout"),
        (["http://127.0.0.1:2379"], {"prefix": "no-slash"}, st.InvalidArgumentError, "prefix"),
        (["http://127.0.0.1:2379"], {"prefix": ""}, st.InvalidArgumentError, "prefix"),
        ([5], {}, st.ArgumentTypeError, "endpoints"),
        ([b"http://127.0.0.1:2379"], {}, st.ArgumentTypeError, "endpoints"),
        ([["http://127.0.0.1:2379", 5]], {}, st.ArgumentTypeError, "endpoint"),
        (["http://127.0.0.1:2379"], {"prefix": 3}, st.ArgumentTypeError, "prefix"),
        (["http://127.0.0.1:2379"], {"lease_ttl": "10s"}, st.ArgumentTypeError, "lease_ttl"),
    ],
)
def test_bad_arguments_are_refused_before_connecting(args, kw, exc, words):
    started = time.monotonic()
    with pytest.raises(exc) as info:
        lc.Store.etcd(*args, **kw)
    assert words in str(info.value), str(info.value)
    assert time.monotonic() - started < 0.5, "refused without a connect attempt"
    if exc is not st.ArgumentTypeError:
        assert isinstance(info.value, ValueError)


def test_the_embedded_store_says_what_it_is():
    store = lc.Store()
    assert store.kind == "embedded" and store.requests == 0
    assert not store and len(store) == 0  # as before: an empty embedded store is falsy
    assert issubclass(lc.StoreKindError, TypeError)
    assert st.StoreKindError is lc.StoreKindError


# ---- With etcd ------------------------------------------------------------------------------


def wait_for(what, timeout, condition):
    until = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < until, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.fixture
def prefix(request):
    """A key prefix of its own for each test and each run."""
    return f"/spot-py-test/{request.node.name}-{time.time_ns()}/"


class Cluster:
    """Two 'processes': a store each (its own etcd lease) and a node on it, one factory
    counting creations per Spot id across both."""

    def __init__(self, prefix, node_kw=({}, {})):
        self.made = Counter()
        self.lock = threading.Lock()
        self.stores = [lc.Store.etcd(ENDPOINT, prefix=prefix, lease_ttl=4) for _ in range(2)]
        self.nodes = [
            lc.Node(i + 1, 1000 + i + 1, s, factory=self.factory, **kw)
            for i, (s, kw) in enumerate(zip(self.stores, node_kw))
        ]

    def factory(self, spot_id, kind):
        with self.lock:
            self.made[spot_id] += 1

    def shutdown(self):
        for n in self.nodes:
            n.shutdown()


@pytest.fixture
def two(prefix):
    c = Cluster(prefix)
    yield c
    c.shutdown()


@needs_etcd
def test_two_nodes_on_two_etcd_stores_create_once_and_route_through_etcd(two):
    (s1, s2), (n1, n2) = two.stores, two.nodes
    assert s1.kind == "etcd" and ENDPOINT in repr(s1)
    assert n1.store is s1
    gen = n1.send_or_create(7, b"hello")
    assert two.made[7] == 1
    # Node 2's store reads the location from etcd: Spot 7 is Ready on node 1.
    seen = s2.location(7)
    assert seen == lc.Location(1, lc.SpotKind.INSTANCE, "ready", gen)
    assert s1.location(7) == seen
    wait_for("each store to see the other node", 5,
             lambda: s2.node_status(1) == "alive" and s1.node_status(2) == "alive")
    assert s1.node_status(99) == "gone"
    # Node 1 lives and does not listen: a message from node 2 to the Spot node 1 owns ends
    # with Unavailable (it did not run), and the intent creates nothing a second time.
    for call in (n2.send, n2.send_or_create):
        with pytest.raises(lc.UnavailableError, match="does not listen"):
            call(7, b"from node 2")
    assert two.made[7] == 1
    # The owner runs the messages it was sent itself.
    ran = []
    while n1.dispatch(lambda r: ran.append(r.payload), timeout=0.2):
        pass
    assert ran == [b"hello"]


@needs_etcd
def test_the_steady_state_send_path_makes_no_etcd_request(two):
    (s1, _), (n1, _) = two.stores, two.nodes
    before = s1.requests
    n1.send_or_create(7, b"")
    assert s1.requests - before == 2, "an activation: the reservation (which reads an existing record in the same request), the commit"
    before = s1.requests
    for _ in range(300):  # 600 messages: within the lane's 1,024
        n1.send(7, b"x")
        n1.send_or_create(7, b"y")
    assert s1.requests == before, "sends to a Ready Spot made etcd requests"
    # A Spot runs one record at a time: each exchange hands over the next one.
    ran = []
    until = time.monotonic() + 10
    while len(ran) < 601 and time.monotonic() < until:
        n1.dispatch(lambda r: ran.append(r.payload), timeout=0.05)
    assert ran == [b""] + [b"x", b"y"] * 300 and two.made[7] == 1
    assert s1.requests == before


@needs_etcd
def test_a_released_spot_is_created_again_on_the_other_node(two):
    (s1, s2), (n1, n2) = two.stores, two.nodes
    first = n1.send_or_create(7, b"")
    n1.shutdown()  # its Spots close, their locations are released in etcd
    wait_for("the release to reach node 2's store", 5, lambda: s2.location(7) is None)
    again = n2.send_or_create(7, b"")
    assert again > first and two.made[7] == 2
    assert s1.location(7) == lc.Location(2, lc.SpotKind.INSTANCE, "ready", again)


@needs_etcd
def test_embedded_only_calls_raise_store_kind_error_and_the_rest_work(two):
    (s1, s2), (n1, n2) = two.stores, two.nodes
    for call in (lambda: s1.expire_node(1), lambda: len(s1)):
        with pytest.raises(lc.StoreKindError, match="embedded store"):
            call()
    assert s1, "an etcd store is true (it has no len())"
    n1.send_or_create(7, b"")
    assert s2.location(7).node_id == 1
    # mark_down: this process's evidence that node 1 cannot be reached; its Spots are
    # Unavailable here (nothing is created), not for node 1's own store.
    s2.mark_down(1)
    assert s2.node_status(1) == "down" and s1.node_status(1) == "alive"
    with pytest.raises(lc.UnavailableError):
        n2.send_or_create(7, b"")
    assert two.made[7] == 1


@needs_etcd
def test_a_node_id_live_in_another_process_is_refused(two):
    with pytest.raises(lc.LocationStoreError, match="already live"):
        lc.Node(1, 2001, two.stores[1])


def run_all(node, want, timeout):
    """Dispatches on `node` until `want` messages ran or `timeout` passed, then once more
    briefly (to catch any beyond `want`); (spot_id, payload) of each, in order."""
    ran = []
    until = time.monotonic() + timeout
    while len(ran) < want and time.monotonic() < until:
        node.dispatch(lambda r: ran.append((r.spot_id, r.payload)), timeout=0.05)
    while node.dispatch(lambda r: ran.append((r.spot_id, r.payload)), timeout=0.2):
        pass
    return ran


def check_listens(node):
    host, _, port = node.address.rpartition(":")
    assert host == "127.0.0.1" and 0 < int(port) < 65536, node.address


@needs_etcd
def test_a_message_from_another_process_reaches_the_owner_over_tcp(prefix):
    c = Cluster(prefix, node_kw=({"listen": "127.0.0.1:0"}, {}))
    try:
        (n1, n2) = c.nodes
        check_listens(n1)
        assert n2.address is None
        gen = n1.send_or_create(77, b"created")
        n2.send(77, b"over tcp")
        assert n2.send_or_create(77, b"again") == gen, "the same Spot, not a second one"
        assert c.made[77] == 1
        assert run_all(n1, 3, 5) == [(77, b"created"), (77, b"over tcp"), (77, b"again")]
        assert run_all(n2, 0, 0) == [], "nothing runs on the sender"
        with pytest.raises(lc.NotFoundError):
            n2.spot_kind(77)
        assert n1.stats().messages_completed == 3
    finally:
        c.shutdown()


@needs_etcd
def test_a_creation_placed_on_the_listening_node_runs_there(prefix):
    # Node 2 holds its Entry Spot only (active_cap 1): placement picks node 1.
    c = Cluster(prefix, node_kw=({"listen": "127.0.0.1:0"},
                                 {"listen": "127.0.0.1:0", "active_cap": 1}))
    try:
        (s1, s2), (n1, n2) = c.stores, c.nodes
        check_listens(n1)
        check_listens(n2)
        assert n1.address != n2.address
        gen = n2.send_or_create(88, b"first")
        assert c.made[88] == 1
        assert n1.spot_kind(88) == lc.SpotKind.INSTANCE
        with pytest.raises(lc.NotFoundError):
            n2.spot_kind(88)
        assert s2.location(88) == lc.Location(1, lc.SpotKind.INSTANCE, "ready", gen)
        assert run_all(n1, 1, 5) == [(88, b"first")]
        assert run_all(n2, 0, 0) == []
    finally:
        c.shutdown()
