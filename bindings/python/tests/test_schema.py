"""One schema: the end reasons, closing reasons, node counters and exception classes the
native module knows (from the Rust enums and structs) are exactly the package's. A value
added in Rust only fails here."""
import dataclasses
import pathlib
import re

import pytest

import spot_timer as st
from spot_timer import _native
from spot_timer import lifecycle as lc

NATIVE_SRC = pathlib.Path(__file__).resolve().parents[1] / "src"


def test_end_reasons_are_the_cores():
    core = dict(_native.END_REASONS)
    assert len(core) == len(_native.END_REASONS) >= 6
    assert {r.value: r.name for r in st.EndReason} == core


def test_close_reasons_are_the_lifecycles():
    core = dict(_native.CLOSE_REASONS)
    assert len(core) == len(_native.CLOSE_REASONS) >= 5
    assert {r.value: r.name for r in lc.CloseReason} == core


def test_node_stats_fields_are_the_lifecycles_list_in_every_python_place():
    store = lc.Store()
    with lc.Node(1, 1001, store) as node:
        metrics = node.metrics()
        names = sorted(n for n, _, _ in metrics)
        assert len(names) == len(set(names)) > 15
        assert sorted(f.name for f in dataclasses.fields(lc.NodeStats)) == names
        assert dict((n, v) for n, _, v in metrics)["active_spots"] == 1  # the Entry Spot
        assert node.stats().active_spots == 1
        kinds = {n: k for n, k, _ in metrics}
        text = node.prometheus("n")
        for name, kind in kinds.items():
            full = f"n_{name}_total" if kind == "counter" else f"n_{name}"
            assert f"# TYPE {full} {kind}\n" in text
        assert "n_active_spots 1\n" in text
        with pytest.raises(st.InvalidArgumentError):
            node.prometheus("9bad")
        with pytest.raises(st.InvalidArgumentError):
            node.prometheus("")


def test_every_exception_the_native_module_raises_is_a_class_of_the_package():
    """The native module names its exception classes (`py_error(py, "XError", ...)` and the
    core error mapping): each is a `SpotTimerError` of the native module, exported by the
    package and listed in its ``__all__``."""
    from spot_timer import _native as _errors

    names = set()
    for f in NATIVE_SRC.rglob("*.rs"):
        names.update(re.findall(r'"([A-Z]\w*Error)"', f.read_text()))
    assert len(names) > 15
    for name in sorted(names):
        cls = getattr(_errors, name, None)
        assert isinstance(cls, type) and issubclass(cls, st.SpotTimerError), name
        assert getattr(st, name) is cls, name
        assert name in st.__all__, name
