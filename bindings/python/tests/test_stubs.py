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


def test_py_typed_is_shipped():
    pkg = pathlib.Path(spot_timer.__file__).parent
    assert (pkg / "py.typed").exists()
    assert (pkg / "__init__.pyi").exists()
