"""The hand-written .pyi stubs match the runtime module (mypy.stubtest) and are shipped."""
import pathlib
import subprocess
import sys

import spot_timer


def test_stubtest():
    p = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "spot_timer"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr


def test_py_typed_is_shipped_and_the_native_module_has_the_one_stub():
    """The package's modules are annotated in place; `_native.pyi` is the only stub, the one
    place a native signature is written."""
    pkg = pathlib.Path(spot_timer.__file__).parent
    assert (pkg / "py.typed").exists()
    assert sorted(p.name for p in pkg.glob("*.pyi")) == ["_native.pyi"]


def test_the_package_passes_mypy_strict():
    p = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "-p", "spot_timer"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr


def test_examples_type_check_strictly():
    """The Python examples pass `mypy --strict` against the shipped stubs (a handler of the
    wrong shape, a misspelt dispatch mode or an unchecked Optional would fail here)."""
    examples = pathlib.Path(__file__).resolve().parents[3] / "examples" / "python"
    files = sorted(str(f) for f in examples.glob("*.py"))
    assert files
    p = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *files],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr


def test_a_handler_of_the_wrong_shape_fails_the_type_check(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import spot_timer as st\n"
        "def handler(a: int, b: int) -> None: ...\n"
        "rt = st.Runtime(dispatch='threads')\n"
        "rt.owner(1).every(1.0, handler)\n"
    )
    p = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(bad)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode != 0
    assert "dispatch" in p.stdout or "Literal" in p.stdout, p.stdout
    assert "handler" in p.stdout, p.stdout


LIFECYCLE_USAGE = '''
from typing import List, Optional
from spot_timer import lifecycle as lc
import spot_timer as st

store = lc.Store()
made: List[int] = []

def factory(spot_id: int, kind: lc.SpotKind) -> None:
    made.append(spot_id)

def on_close(spot_id: int, kind: lc.SpotKind, reason: lc.CloseReason) -> None:
    pass

node = lc.Node(1, 1001, store, manual_clock=True, factory=factory, on_close=on_close,
               application_lane=lc.LaneLimits(16, 1 << 20), instance_idle_timeout=None)
generation: int = node.send_or_create(7, b"hi")
node.send(7, bytearray(b"again"))

def handler(record: lc.SpotRecord) -> None:
    payload: Optional[bytes] = record.payload
    if record.kind == "tick":
        key: Optional[int] = record.key

handled: int = node.dispatch(handler, timeout=0.5)
used: lc.LaneUse = node.lane_use(7, lc.Lane.APPLICATION)
targets: List[lc.RelocationTarget] = node.relocation_targets()
stats: lc.NodeStats = node.stats()
where: Optional[lc.Location] = store.location(7)
try:
    node.send(8, b"")
except lc.CapacityExceededError as e:
    queue: Optional[lc.Queue] = e.queue
except st.NotFoundError as e:
    missing: Optional[int] = e.spot_id
node.shutdown()
'''


def test_lifecycle_usage_type_checks_strictly(tmp_path):
    """The lifecycle stubs: typical use passes `mypy --strict`; a handler of the wrong
    shape and a str payload fail it."""
    good = tmp_path / "good.py"
    good.write_text(LIFECYCLE_USAGE)
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from spot_timer import lifecycle as lc\n"
        "def handler(a: int, b: int) -> None: ...\n"
        "node = lc.Node(1, 1001)\n"
        "node.dispatch(handler)\n"
        "node.send(7, 'text')\n"
    )
    for path, ok in [(good, True), (bad, False)]:
        p = subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(path)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert (p.returncode == 0) == ok, p.stdout + p.stderr
        if not ok:
            assert "dispatch" in p.stdout and "send" in p.stdout, p.stdout


def test_the_package_has_its_version():
    import importlib.metadata

    import spot_timer

    assert spot_timer.__version__ == importlib.metadata.version("spot-timer")
    assert spot_timer.__version__.count(".") == 2
