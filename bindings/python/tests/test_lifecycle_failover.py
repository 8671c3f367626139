"""Failover from Python, with separate node processes (tests/cluster_node.py, public API
only) and real etcd, with the meaning of lifecycle-etcd/tests/failover.rs. Every process
logs what it ran, created and closed on the one clock they share; the test's own node drives
traffic and logs every send; the invariants are checked from the logs alone.

Run by ``make test-cluster`` (``SPOT_ETCD_ENDPOINT`` set by tests/cluster/with-etcd.sh); the
outage and leader tests start etcd processes of their own."""
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest

import spot_timer as st
from spot_timer import lifecycle as lc

ENDPOINT = os.environ.get("SPOT_ETCD_ENDPOINT")
pytestmark = [
    pytest.mark.skipif(not ENDPOINT, reason="needs etcd: SPOT_ETCD_ENDPOINT"),
    pytest.mark.timeout(300),
]
TTL = 3.0
NS = 1_000_000_000
GRACE = NS // 2  # the store's watch and the refresh after a lease end
HERE = os.path.dirname(os.path.abspath(__file__))


def prefix(name):
    return f"/spot-py-failover/{name}-{time.time_ns()}/"


def wait_for(what, limit, cond):
    until = time.monotonic() + limit
    while not cond():
        assert time.monotonic() < until, f"timed out waiting for {what}"
        time.sleep(0.02)


class NodeProc:
    """A tests/cluster_node.py process and the events it logged."""

    def __init__(self, pfx, node_id, endpoints=None):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "cluster_node.py"),
             endpoints or ENDPOINT, pfx, str(node_id), str(TTL)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
        )
        self.lines = []
        self.events = []  # (at, what, spot, arg)
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        self.wait_line("ready", 30)

    def _read(self):
        for line in self.proc.stdout:
            w = line.split()
            with self.lock:
                self.lines.append(line)
                if w and w[0] in ("ran", "factory", "close", "term"):
                    self.events.append(
                        (int(w[1]), w[0], int(w[2]) if len(w) > 2 else 0, w[3] if len(w) > 3 else "")
                    )

    def wait_line(self, word, limit):
        wait_for(f"{word!r} from a node process", limit, lambda: self._has(word))

    def _has(self, word):
        with self.lock:
            return any(line.split()[:1] == [word] for line in self.lines)

    def command(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def logged(self):
        with self.lock:
            return list(self.events)

    def signal(self, sig):
        os.kill(self.proc.pid, sig)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)


class Driver:
    """The test's own node: it handles the messages of Spots created here and sends."""

    def __init__(self, pfx, node_id=1, endpoints=None, ttl=TTL, **kw):
        self.store = lc.Store.etcd(endpoints or ENDPOINT, prefix=pfx, lease_ttl=ttl, **kw)
        self.closes = []
        self.factories = {}
        self.ran = []
        self.lock = threading.Lock()

        def factory(spot, kind):
            with self.lock:
                self.factories[spot] = self.factories.get(spot, 0) + 1

        def on_close(spot, kind, reason):
            with self.lock:
                self.closes.append((time.time_ns(), spot, reason))

        self.node = lc.Node(node_id, (1 << 64) - 1 - node_id, self.store,
                            factory=factory, on_close=on_close, listen="127.0.0.1:0")
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._dispatch, daemon=True)
        self.thread.start()

    def _dispatch(self):
        def handle(r):
            if r.kind == "message" and r.payload and len(r.payload) == 8:
                with self.lock:
                    self.ran.append(int.from_bytes(r.payload, "little"))

        while not self.stop.is_set():
            try:
                self.node.dispatch(handle, timeout=0.005)
            except lc.NodeClosedError:
                return

    def traffic(self, ids, threads, running):
        seq = iter(range(1, 1 << 62))
        seq_lock = threading.Lock()
        results = [[] for _ in range(threads)]

        def sender(t):
            rnd = random.Random(t)
            while running.is_set():
                with seq_lock:
                    n = next(seq)
                spot = rnd.randrange(ids)
                intent = rnd.random() < 2 / 3
                at = time.time_ns()
                try:
                    if intent:
                        self.node.send_or_create(spot, n.to_bytes(8, "little"))
                    else:
                        self.node.send(spot, n.to_bytes(8, "little"))
                    ok = None
                except Exception as e:  # noqa: BLE001 - every outcome is logged
                    ok = repr(e)
                results[t].append((n, spot, intent, at, ok))
                time.sleep(0.001)

        ts = [threading.Thread(target=sender, args=(t,)) for t in range(threads)]
        for t in ts:
            t.start()
        return ts, results

    def close(self):
        self.node.shutdown()
        self.stop.set()
        self.thread.join(timeout=30)


def ran_counts(driver, procs):
    counts = {}
    with driver.lock:
        for s in driver.ran:
            counts[s] = counts.get(s, 0) + 1
    for p in procs:
        for at, what, spot, arg in p.logged():
            if what == "ran" and int(arg) > 0:
                counts[int(arg)] = counts.get(int(arg), 0) + 1
    return counts


def run_traffic(driver, ids, seconds_before, action, seconds_after):
    running = threading.Event()
    running.set()
    ts, results = driver.traffic(ids, 2, running)
    time.sleep(seconds_before)
    marks = action()
    time.sleep(seconds_after)
    running.clear()
    for t in ts:
        t.join(timeout=60)
    return marks, [s for r in results for s in r]


def test_after_a_kill_9_every_intent_recreates_its_spot_once_the_lease_is_over():
    pfx = prefix("kill")
    n2, n3 = NodeProc(pfx, 2), NodeProc(pfx, 3)
    driver = None
    try:
        n2.command("create 0 100")
        n3.command("create 100 100")
        n2.wait_line("created", 60)
        n3.wait_line("created", 60)
        driver = Driver(pfx)

        def kill():
            t = time.time_ns()
            n2.signal(signal.SIGKILL)
            return t

        killed, sent = run_traffic(driver, 200, 1.5, kill, 2 * TTL + 2)
        time.sleep(0.5)
        over = killed + int(TTL * NS) + GRACE
        failed = [s for s in sent if s[2] and s[3] > over and s[4] is not None]
        counts = ran_counts(driver, [n3])
        twice = [k for k, v in counts.items() if v > 1]
        lost = [s for s in sent if s[3] > over and s[4] is None and s[0] not in counts]
        assert not failed, failed[:5]
        assert not twice, twice[:5]
        assert not lost, lost[:5]
        with driver.lock:
            assert sum(1 for s in driver.factories if s < 100) > 60, "node 2's Spots re-created"
    finally:
        if driver:
            driver.close()
        n2.close()
        n3.close()


def test_a_node_resumed_past_its_lease_starts_nothing_of_its_ended_term():
    pfx = prefix("stop")
    n3 = NodeProc(pfx, 3)
    driver = None
    try:
        n3.command("create 0 100")
        n3.wait_line("created", 60)
        driver = Driver(pfx)
        marks = {}

        def stop_and_resume():
            marks["stopped"] = time.time_ns()
            n3.signal(signal.SIGSTOP)
            time.sleep(TTL + 3)
            marks["resumed"] = time.time_ns()
            n3.signal(signal.SIGCONT)

        _, sent = run_traffic(driver, 100, 1.5, stop_and_resume, 2)
        n3.wait_line("term", 20)
        n3.command("shutdown")
        n3.wait_line("shutdown_done", 30)
        time.sleep(0.3)
        entry = (1 << 64) - 1 - 3
        late = [
            e for e in n3.logged()
            if e[0] > marks["resumed"] and e[2] != entry
            and (e[1] in ("ran", "factory") or (e[1] == "close" and e[3] != "AUTHORITY_LOST"))
        ]
        given_up = [e for e in n3.logged() if e[1] == "close" and e[3] == "AUTHORITY_LOST"]
        over = marks["stopped"] + int(TTL * NS) + GRACE
        counts = ran_counts(driver, [n3])
        failed = [s for s in sent if s[2] and s[3] > over and s[4] is not None]
        acked_lost = [s for s in sent if s[3] > over and s[4] is None and s[0] not in counts]
        assert not late, late[:5]
        assert len(given_up) >= 90, "its Spots were given up, not closed as its own"
        assert not failed, failed[:5]
        assert not acked_lost, acked_lost[:5]
        assert not [k for k, v in counts.items() if v > 1], "handled twice"
    finally:
        if driver:
            driver.close()
        n3.close()


def test_a_stale_node_process_leaves_the_registration_of_its_successor_alone():
    pfx = prefix("successor")
    old = NodeProc(pfx, 3)
    new = None
    driver = None
    try:
        old.command("create 0 10")
        old.wait_line("created", 60)
        old.signal(signal.SIGSTOP)
        probe = lc.Store.etcd(ENDPOINT, prefix=pfx, lease_ttl=TTL)
        wait_for("the stopped node's lease to end", 20,
                 lambda: probe.node_status(3) == "gone" and probe.location(0) is None)
        new = NodeProc(pfx, 3)
        new.command("create 100 1")
        new.wait_line("created", 60)
        old.signal(signal.SIGCONT)
        time.sleep(0.5)
        old.command("shutdown")
        old.wait_line("shutdown_done", 30)
        time.sleep(1)
        assert probe.node_status(3) == "alive", "the old process left the new registration"
        driver = Driver(pfx)
        driver.node.send(100, (7).to_bytes(8, "little"))
        wait_for("the message on the new node 3", 10,
                 lambda: any(e[1] == "ran" and e[2] == 100 and e[3] == "7" for e in new.logged()))
    finally:
        if driver:
            driver.close()
        old.close()
        if new:
            new.close()


def test_a_call_to_a_node_reported_down_ends_at_once():
    pfx = prefix("down")
    n3 = NodeProc(pfx, 3)
    driver = None
    try:
        n3.command("create 0 100")
        n3.wait_line("created", 60)
        driver = Driver(pfx)
        driver.node.send(1, (1).to_bytes(8, "little"))
        n3.signal(signal.SIGSTOP)
        stopped = time.monotonic()
        calls = []
        i = 0
        while time.monotonic() - stopped < TTL + 2:
            i = (i + 1) % 100
            status = driver.store.node_status(3)
            t = time.monotonic()
            try:
                driver.node.send_or_create(i, i.to_bytes(8, "little"))
                r = None
            except lc.UnavailableError as e:
                r = e
            calls.append((time.monotonic() - stopped, status, time.monotonic() - t, r))
            time.sleep(0.02)
        for at, status, took, r in calls:
            if status == "down":
                assert r is None or r.may_have_run is False, r
                assert took < 1.0, f"a call while node 3 was down took {took:.2f}s"
        slowest = max(c[2] for c in calls)
        assert slowest < TTL + 1, f"a call waited {slowest:.2f}s for the stopped process"
        after = [c for c in calls if c[0] > TTL + 0.5]
        assert after and all(c[3] is None for c in after), [c for c in after if c[3]][:3]
        n3.signal(signal.SIGCONT)
    finally:
        if driver:
            driver.close()
        n3.close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OwnEtcd:
    """etcd members of a test's own, on free ports, data kept across restarts."""

    def __init__(self, members):
        self.dir = tempfile.mkdtemp(prefix="spot-py-etcd-")
        self.clients = [free_port() for _ in range(members)]
        self.peers = [free_port() for _ in range(members)]
        self.procs = [None] * members
        for i in range(members):
            self.run(i)

    def endpoints(self):
        return [f"http://127.0.0.1:{p}" for p in self.clients]

    def run(self, i):
        cluster = ",".join(f"m{j}=http://127.0.0.1:{p}" for j, p in enumerate(self.peers))
        client, peer = f"http://127.0.0.1:{self.clients[i]}", f"http://127.0.0.1:{self.peers[i]}"
        self.procs[i] = subprocess.Popen(
            ["etcd", "--name", f"m{i}", "--data-dir", os.path.join(self.dir, f"m{i}"),
             "--listen-client-urls", client, "--advertise-client-urls", client,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", cluster, "--initial-cluster-state", "new",
             "--initial-cluster-token", "spot-py-own", "--logger", "zap",
             "--log-outputs", "/dev/null"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )

    def kill(self, i):
        if self.procs[i] is not None:
            self.procs[i].kill()
            self.procs[i].wait()
            self.procs[i] = None

    def leader(self):
        for i, ep in enumerate(self.endpoints()):
            if self.procs[i] is None:
                continue
            r = subprocess.run(
                ["etcdctl", "--endpoints", ep, "--command-timeout=1s", "endpoint", "status",
                 "--write-out=json"],
                capture_output=True, text=True, env={**os.environ, "ETCDCTL_API": "3"},
            )
            if r.returncode != 0:
                continue
            try:
                st = json.loads(r.stdout)[0]["Status"]
            except (ValueError, KeyError, IndexError):
                continue
            if st["header"]["member_id"] == st["leader"]:
                return i
        return None

    def close(self):
        for i in range(len(self.procs)):
            self.kill(i)
        shutil.rmtree(self.dir, ignore_errors=True)


def connected_store(endpoints, **kw):
    store = []

    def attempt():
        try:
            store.append(lc.Store.etcd(endpoints, **kw))
            return True
        except lc.LocationStoreError:
            return False

    wait_for("etcd to answer", 30, attempt)
    return store[0]


def test_an_etcd_outage_longer_than_the_lease_ends_the_term_and_the_node_serves_again():
    etcd = OwnEtcd(1)
    try:
        kw = dict(prefix="/outage/", lease_ttl=TTL, request_timeout=0.7)
        runs, closes = [], []
        node = lc.Node(1, (1 << 64) - 2, connected_store(etcd.endpoints(), **kw),
                       factory=lambda s, k: runs.append(s),
                       on_close=lambda s, k, r: closes.append((s, r)))
        other = lc.Node(2, (1 << 64) - 3, connected_store(etcd.endpoints(), **kw))
        node.send_or_create(1, b"x")
        for spot in range(1000, 1100):
            other.create_user_spot(spot)
        created = len(runs)
        etcd.kill(0)
        down = time.monotonic()
        t = time.monotonic()
        other.shutdown()
        shutdown_took = time.monotonic() - t
        while time.monotonic() - down < 3 * TTL:
            with pytest.raises(lc.UnavailableError) as info:
                node.send_or_create(2, b"x")
            assert info.value.may_have_run is False
            time.sleep(0.05)
        assert len(runs) == created, "no factory ran during the outage"
        lost = node.stats().authority_lost
        etcd.run(0)
        connected_store(etcd.endpoints(), **kw)
        answering = time.monotonic()

        def serves():
            try:
                node.send_or_create(7, b"x")
                return True
            except (lc.UnavailableError, lc.StaleRouteError):
                return False

        wait_for("the node to serve again", 3 * TTL, serves)
        served_after = time.monotonic() - answering
        assert shutdown_took < 10, f"shutdown during the outage took {shutdown_took:.1f}s"
        assert lost >= 2
        assert served_after <= TTL, f"served again {served_after:.1f}s after etcd answered"
        node.send_or_create(1, b"again")
        assert [r for s, r in closes if s == 1] == [lc.CloseReason.AUTHORITY_LOST]
        node.shutdown()
    finally:
        etcd.close()


def test_an_id_whose_creation_failed_at_a_leader_kill_is_created_by_the_next_intent():
    etcd = OwnEtcd(3)
    try:
        store = connected_store(etcd.endpoints(), prefix="/leader/", lease_ttl=6.0,
                                request_timeout=1.5)
        wait_for("a leader", 30, lambda: etcd.leader() is not None)
        factories, closes = {}, []

        def factory(s, k):
            factories[s] = factories.get(s, 0) + 1

        node = lc.Node(1, (1 << 64) - 2, store, factory=factory,
                       on_close=lambda s, k, r: closes.append((s, r)))
        failed_total = 0
        for rnd in range(20):
            base = 10_000 * (rnd + 1)
            failed = []

            def create():
                for spot in range(base, base + 40):
                    try:
                        node.send_or_create(spot, b"x")
                    except st.SpotTimerError:
                        failed.append(spot)

            t = threading.Thread(target=create)
            t.start()
            time.sleep(0.02 + 0.007 * rnd)
            leader = etcd.leader()
            assert leader is not None, f"round {rnd}: no leader"
            etcd.kill(leader)
            t.join(timeout=120)
            etcd.run(leader)

            def answers():
                try:
                    node.send_or_create(base + 5000, b"x")
                    return True
                except st.SpotTimerError:
                    return False

            wait_for("etcd to answer a creation", 30, answers)
            for spot in failed:
                node.send_or_create(spot, b"next intent")  # raises if the id is stuck
            failed_total += len(failed)
            wait_for("a leader", 30, lambda: etcd.leader() is not None)
        node.shutdown()
        print(f"FIGURES leader kills (Python): 20 rounds, {failed_total} creations failed at "
              f"a kill, each created by the next intent")
        for spot, n in factories.items():
            assert n == sum(1 for s, r in closes if s == spot), (spot, n)
    finally:
        etcd.close()
