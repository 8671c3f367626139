import pytest

import spot_timer as st

MS = 0.001


@pytest.fixture
def manual():
    """A runtime on a manual clock whose records are delivered by rt.dispatch()."""
    clock = st.ManualClock()
    rt = st.Runtime(clock, dispatch="manual")
    yield rt
    rt.close()


def step(rt: st.Runtime, seconds: float) -> int:
    """Advance the manual clock and deliver everything that became due."""
    rt.advance(seconds)
    return rt.dispatch()
