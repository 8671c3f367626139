"""One node process of the Python failover tests (test_lifecycle_failover.py spawns it),
written against the public API only: ``python cluster_node.py ENDPOINTS PREFIX NODE TTL``.

It logs what it does, one line per event, with the wall clock in nanoseconds since the Unix
epoch (the one clock every process of a test shares): ``factory T SPOT``, ``close T SPOT
REASON``, ``ran T SPOT SEQ`` (a message, its 8-byte payload), ``term T N`` (terms renewed),
then ``ready ADDRESS``. Commands on stdin: ``create FIRST COUNT`` (Instance Spots created
here; answers ``created``), ``shutdown`` (``shutdown_done T``). At EOF it exits."""
import sys
import threading
import time

from spot_timer import lifecycle as lc


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main():
    endpoints, prefix, node_id, ttl = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    store = lc.Store.etcd(endpoints.split(","), prefix=prefix, lease_ttl=ttl)
    node = lc.Node(
        node_id,
        (1 << 64) - 1 - node_id,
        store,
        factory=lambda spot, kind: say(f"factory {time.time_ns()} {spot}"),
        on_close=lambda spot, kind, reason: say(f"close {time.time_ns()} {spot} {reason.name}"),
        listen="127.0.0.1:0",
    )

    def handle(record):
        if record.kind == "message" and record.payload and len(record.payload) == 8:
            seq = int.from_bytes(record.payload, "little")
            say(f"ran {time.time_ns()} {record.spot_id} {seq}")

    def dispatch():
        while True:
            try:
                node.dispatch(handle, timeout=0.005)
            except lc.NodeClosedError:
                return

    def watch_terms():
        terms = 0
        while True:
            try:
                t = node.stats().terms_renewed
            except lc.NodeClosedError:
                return
            if t != terms:
                terms = t
                say(f"term {time.time_ns()} {terms}")
            time.sleep(0.005)

    threading.Thread(target=dispatch, daemon=True).start()
    threading.Thread(target=watch_terms, daemon=True).start()
    say(f"ready {node.address}")
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["create"]:
            first, count = int(words[1]), int(words[2])
            for spot in range(first, first + count):
                node.send_or_create(spot, bytes(8))
            say("created")
        elif words == ["shutdown"]:
            node.shutdown()
            say(f"shutdown_done {time.time_ns()}")
        else:
            raise SystemExit(f"unknown command {line!r}")


if __name__ == "__main__":
    main()
