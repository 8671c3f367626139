"""The examples in examples/python run and finish."""
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[3] / "examples" / "python"


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason="examples/python not found")
@pytest.mark.parametrize(
    "script,args",
    [
        ("threads_example.py", []),
        ("asyncio_example.py", []),
        ("demo.py", ["--owners", "300", "--seconds", "0.5"]),
    ],
)
def test_example_runs(script, args):
    p = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
