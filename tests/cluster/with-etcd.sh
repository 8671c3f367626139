#!/usr/bin/env bash
# Runs a command with etcd on loopback: one single-member etcd and one 3-member etcd
# cluster, each in a `mktemp -d` data directory, all stopped (and the directories removed)
# when the command ends, whatever happens. The command sees:
#   SPOT_ETCD_ENDPOINT        the single member's client URL
#   SPOT_ETCD_CLUSTER         the 3 members' client URLs, comma-separated
#   SPOT_ETCD_MEMBER_PIDS     the 3 members' process ids, in the same order
# Ports: SPOT_ETCD_PORT_BASE (default 24790) .. +7, on 127.0.0.1.
set -euo pipefail
BASE=${SPOT_ETCD_PORT_BASE:-24790}
WORK=$(mktemp -d -t spot-etcd.XXXXXX)
PIDS=()
CHILD=
cleanup() {
  local rc=$?
  exec 2>/dev/null   # no job-control notices for the members killed here
  # The command runs in its own process group: it goes with everything it started
  # (the test binary, the node processes).
  if [ -n "$CHILD" ]; then kill -9 -- "-$CHILD" 2>/dev/null || true; fi
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT
trap 'exit 143' INT TERM

for port in $(seq "$BASE" $((BASE + 7))); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "with-etcd: port $port on 127.0.0.1 is in use (set SPOT_ETCD_PORT_BASE)" >&2
    exit 1
  fi
done

# start_member NAME CLIENT_PORT PEER_PORT INITIAL_CLUSTER TOKEN (one token per cluster)
start_member() {
  mkdir -p "$WORK/$1"
  etcd --name "$1" --data-dir "$WORK/$1" --logger zap --log-outputs "$WORK/$1.log" \
    --listen-client-urls "http://127.0.0.1:$2" --advertise-client-urls "http://127.0.0.1:$2" \
    --listen-peer-urls "http://127.0.0.1:$3" --initial-advertise-peer-urls "http://127.0.0.1:$3" \
    --initial-cluster "$4" --initial-cluster-state new --initial-cluster-token "$5" \
    >/dev/null 2>&1 &
  PIDS+=($!)
}

start_member single "$BASE" $((BASE + 1)) "single=http://127.0.0.1:$((BASE + 1))" "spot-single-$$"
CLUSTER="m1=http://127.0.0.1:$((BASE + 5)),m2=http://127.0.0.1:$((BASE + 6)),m3=http://127.0.0.1:$((BASE + 7))"
start_member m1 $((BASE + 2)) $((BASE + 5)) "$CLUSTER" "spot-three-$$"
start_member m2 $((BASE + 3)) $((BASE + 6)) "$CLUSTER" "spot-three-$$"
start_member m3 $((BASE + 4)) $((BASE + 7)) "$CLUSTER" "spot-three-$$"

export SPOT_ETCD_ENDPOINT="http://127.0.0.1:$BASE"
export SPOT_ETCD_CLUSTER="http://127.0.0.1:$((BASE + 2)),http://127.0.0.1:$((BASE + 3)),http://127.0.0.1:$((BASE + 4))"
export SPOT_ETCD_MEMBER_PIDS="${PIDS[1]},${PIDS[2]},${PIDS[3]}"

for ep in "$SPOT_ETCD_ENDPOINT" ${SPOT_ETCD_CLUSTER//,/ }; do
  ok=
  for _ in $(seq 40); do
    if ETCDCTL_API=3 etcdctl --endpoints "$ep" --command-timeout=1s endpoint health >/dev/null 2>&1; then
      ok=1; break
    fi
    sleep 0.2
  done
  if [ -z "$ok" ]; then
    echo "with-etcd: etcd at $ep did not become healthy in time; its log:" >&2
    tail -n 20 "$WORK"/*.log >&2 || true
    exit 1
  fi
done
echo >&2 "with-etcd: etcd $(etcd --version | head -1 | awk '{print $3}') at $SPOT_ETCD_ENDPOINT; 3 members at $SPOT_ETCD_CLUSTER"
# In the background with `wait`, so that a signal to this script runs the cleanup at once.
setsid "$@" &
CHILD=$!
wait "$CHILD" 2>/dev/null   # (no notices of the member a test kills)
