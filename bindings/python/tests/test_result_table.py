"""The shared result table (``tests/vectors/results.txt``), asserted through the Python API.

The Rust, C, C++, Python and .NET suites read the same file and run every scenario through
their public API (the Rust reference: ``core/tests/result_table.rs``). A scenario this suite
does not implement fails it, so a row added to the table later fails here until implemented.
"""
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import pytest

import spot_timer as st

MS = 0.001
WAIT = 5.0

TABLE = Path(__file__).resolve().parents[3] / "tests" / "vectors" / "results.txt"

#: The exception class of each error result (docs/contract.md, "Results"); none of these
#: derives from another, so the order does not matter.
ERRORS: List[Tuple[type, str]] = [
    (st.InvalidArgumentError, "E_INVALID_ARGUMENT"),
    (st.UnknownOwnerError, "E_UNKNOWN_OWNER"),
    (st.LeaseExpiredError, "E_LEASE_EXPIRED"),
    (st.RevokedError, "E_REVOKED"),
    (st.StaleHandleError, "E_STALE_TIMER"),
    (st.InvalidCompletionError, "E_INVALID_COMPLETION"),
    (st.CancelTimeoutError, "E_TIMEOUT"),
    (st.WouldDeadlockError, "E_WOULD_DEADLOCK"),
    (st.RuntimeClosedError, "E_CLOSED"),
    (st.NotManualClockError, "E_NOT_MANUAL_CLOCK"),
    (st.CapacityExhaustedError, "E_CAPACITY_EXHAUSTED"),
]


def read_table() -> List[Tuple[str, str]]:
    """The table's rows: (scenario, expected)."""
    rows = []
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        assert len(fields) >= 2, f"a row without an expected result: {line!r}"
        rows.append((fields[0], fields[1]))
    return rows


ROWS = read_table()


def name_of_error(e: BaseException) -> str:
    if isinstance(e, st.CleanupFailedError):
        return "E_CLEANUP_FAILED"
    for cls, name in ERRORS:
        if isinstance(e, cls):
            return name
    return f"E_OTHER({type(e).__name__}: {e})"


def cancel_result(timer: st.Timer) -> str:
    """The name of a blocking cancel's result: its EndReason's name, CLEANUP_FAILED (the
    release hook's exception, whose message must be kept) or the error's name."""
    try:
        reason = timer.cancel(WAIT)
    except st.CleanupFailedError as e:
        assert "boom" in str(e), f"the hook's message is kept: {e!r}"
        return "CLEANUP_FAILED"
    except st.SpotTimerError as e:
        return name_of_error(e)
    if not isinstance(reason, st.EndReason):
        return f"not an EndReason: {reason!r}"
    return reason.name


def outcome(call: Callable[[], object]) -> str:
    """OK, or the name of the error the call raised."""
    try:
        call()
    except st.SpotTimerError as e:
        return name_of_error(e)
    return "OK"


def noop(tick: st.Tick) -> None:
    pass


def failing_hook() -> None:
    raise RuntimeError("boom")


class Host:
    """A fresh runtime on a manual clock; the test drives delivery."""

    def __init__(self) -> None:
        self.rt = st.Runtime(st.ManualClock(), dispatch="manual")

    def owner(self, lease: Optional[float] = None) -> st.Owner:
        return self.rt.owner(1, lease=lease)

    def advance(self, seconds: float) -> None:
        self.rt.advance(seconds)

    def run_due_ticks(self, seconds: float) -> None:
        self.rt.advance(seconds)
        self.rt.dispatch()

    def close(self) -> None:
        self.rt.close()


def run(scenario: str) -> str:
    """Runs one scenario of the table; the result's name."""
    scenario_fn = SCENARIOS.get(scenario)
    if scenario_fn is None:
        return f"scenario {scenario!r} is not implemented by the Python suite"
    h = Host()
    try:
        return scenario_fn(h)
    finally:
        h.close()


def cancel_live(h: Host) -> str:
    t = h.owner().every(10 * MS, noop, key=1)
    return cancel_result(t)


def cancel_twice(h: Host) -> str:
    t = h.owner().every(10 * MS, noop, key=1)
    cancel_result(t)
    return cancel_result(t)


def cancel_superseded(h: Host) -> str:
    o = h.owner()
    first = o.every(10 * MS, noop, key=1)
    o.every(10 * MS, noop, key=1)
    return cancel_result(first)


def cancel_completed_one_shot(h: Host) -> str:
    t = h.owner().after(5 * MS, noop, key=1)
    h.run_due_ticks(10 * MS)
    return cancel_result(t)


def cancel_revoked(h: Host) -> str:
    o = h.owner()
    t = o.every(10 * MS, noop, key=1)
    o.revoke()
    return cancel_result(t)


def cancel_lease_expired(h: Host) -> str:
    o = h.owner(lease=10 * MS)
    t = o.every(100 * MS, noop, key=1)
    h.advance(20 * MS)
    return cancel_result(t)


def cancel_after_close(h: Host) -> str:
    t = h.owner().every(10 * MS, noop, key=1)
    h.close()
    return cancel_result(t)


def cancel_cleanup_failed(h: Host) -> str:
    t = h.owner().every(10 * MS, noop, key=1, on_release=failing_hook)
    return cancel_result(t)


def cancel_cleanup_failed_twice(h: Host) -> str:
    t = h.owner().every(10 * MS, noop, key=1, on_release=failing_hook)
    cancel_result(t)
    return cancel_result(t)


def cancel_in_own_callback(h: Host, afterwards: bool = False) -> str:
    box: Dict[str, object] = {}
    inside: List[str] = []

    def handler(tick: st.Tick) -> None:
        timer = box["t"]
        assert isinstance(timer, st.Timer)
        try:
            inside.append(cancel_result(timer))
        except BaseException as e:  # an exception here would only reach the exception handler
            inside.append(f"the handler raised {e!r}")

    box["t"] = t = h.owner().every(10 * MS, handler, key=1)
    h.run_due_ticks(10 * MS)
    assert len(inside) == 1, f"the handler ran once: {inside!r}"
    if not afterwards:
        return inside[0]
    return cancel_result(t)


def cancel_in_own_callback_result(h: Host) -> str:
    return cancel_in_own_callback(h, afterwards=True)


def register_revoked_owner(h: Host) -> str:
    o = h.owner()
    o.revoke()
    return outcome(lambda: o.every(10 * MS, noop, key=1))


def register_lease_expired(h: Host) -> str:
    o = h.owner(lease=10 * MS)
    h.advance(20 * MS)
    return outcome(lambda: o.every(10 * MS, noop, key=1))


def register_after_close(h: Host) -> str:
    o = h.owner()
    h.close()
    return outcome(lambda: o.every(10 * MS, noop, key=1))


def register_zero_period(h: Host) -> str:
    return outcome(lambda: h.owner().every(0, noop, key=1))


def renew_after_expiry(h: Host) -> str:
    o = h.owner(lease=10 * MS)
    h.advance(20 * MS)
    return outcome(lambda: o.renew(10 * MS))


def renew_revoked(h: Host) -> str:
    o = h.owner()
    o.revoke()
    return outcome(lambda: o.renew(10 * MS))


SCENARIOS: Dict[str, Callable[[Host], str]] = {
    "cancel_live": cancel_live,
    "cancel_twice": cancel_twice,
    "cancel_superseded": cancel_superseded,
    "cancel_completed_one_shot": cancel_completed_one_shot,
    "cancel_revoked": cancel_revoked,
    "cancel_lease_expired": cancel_lease_expired,
    "cancel_after_close": cancel_after_close,
    "cancel_cleanup_failed": cancel_cleanup_failed,
    "cancel_cleanup_failed_twice": cancel_cleanup_failed_twice,
    "cancel_in_own_callback": cancel_in_own_callback,
    "cancel_in_own_callback_result": cancel_in_own_callback_result,
    "register_revoked_owner": register_revoked_owner,
    "register_lease_expired": register_lease_expired,
    "register_after_close": register_after_close,
    "register_zero_period": register_zero_period,
    "renew_after_expiry": renew_after_expiry,
    "renew_revoked": renew_revoked,
}


def test_result_table_has_every_row() -> None:
    assert len(ROWS) >= 17, f"{TABLE} has {len(ROWS)} rows"


@pytest.mark.parametrize(("scenario", "expected"), ROWS, ids=[s for s, _ in ROWS])
def test_result_table_row(scenario: str, expected: str) -> None:
    got = run(scenario)
    assert got == expected, f"{scenario}: expected {expected}, got {got}"
