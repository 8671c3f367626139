from typing import Iterator

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from . import Runtime

__all__ = ["RuntimeCollector"]

class RuntimeCollector(Collector):
    def __init__(self, runtime: Runtime, prefix: str = "spot_timer") -> None: ...
    def collect(self) -> Iterator[Metric]: ...
