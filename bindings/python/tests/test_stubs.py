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
