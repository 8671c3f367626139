#!/usr/bin/env python3
"""Fails when the top-level modules of a crate import each other in a cycle.

The layers of the crates point one way (bindings -> ffi -> core; in the core, data
structures never see the driver), and the module graph is where that shows: module A
depends on module B when a file of A names `crate::B` before its unit tests (a file's
`#[cfg(test)] mod tests` and what follows it are not read). A cycle between top-level
modules is a layer pointing back.

    python3 tests/module_cycles.py core/src ffi/src ...   check these crates
    python3 tests/module_cycles.py --self-test            check that a cycle is caught
"""

import os
import re
import sys
import tempfile

CRATE_PATH = re.compile(r"\bcrate::([a-z_][a-z0-9_]*)")
UNIT_TESTS = re.compile(r"#\[cfg\(test\)\]\s*mod\s+tests\b")


def module_graph(src):
    """{top-level module: the other top-level modules its files name}."""
    graph = {}
    for root, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(root, name)
            parts = os.path.relpath(path, src)[:-3].split(os.sep)
            if parts in (["lib"], ["main"]):
                continue
            top = parts[0]
            with open(path, encoding="utf-8") as f:
                text = f.read()
            tests = UNIT_TESTS.search(text)
            if tests:
                text = text[: tests.start()]
            deps = graph.setdefault(top, set())
            deps.update(m for m in CRATE_PATH.findall(text) if m != top)
    # Names that are not modules of the crate (re-exports at the root) are not edges.
    return {m: {d for d in deps if d in graph} for m, deps in graph.items()}


def find_cycle(graph):
    """One cycle as a list of modules (first repeated at the end), or None."""
    state = {}

    def visit(node, path):
        state[node] = "open"
        path.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == "open":
                return path[path.index(dep):] + [dep]
            if dep not in state:
                found = visit(dep, path)
                if found:
                    return found
        path.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return None


def self_test():
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "queue"))
        files = {
            "lib.rs": "mod queue; mod runtime; mod clock;",
            "clock.rs": "pub fn now() {}",
            "queue/mod.rs": "use crate::clock::now;",
            "runtime.rs": "use crate::queue::Wheel;\n#[cfg(test)]\nmod tests { use crate::runtime; }",
        }
        for name, text in files.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        assert find_cycle(module_graph(d)) is None, "an acyclic tree was reported cyclic"
        with open(os.path.join(d, "queue", "wheel.rs"), "w") as f:
            f.write("use crate::runtime::Shared;")
        cycle = find_cycle(module_graph(d))
        assert cycle and set(cycle) == {"queue", "runtime"}, f"the cycle was missed: {cycle}"
    print("module_cycles: self-test passed")


def main(args):
    if args == ["--self-test"]:
        self_test()
        return 0
    failed = False
    for src in args:
        graph = module_graph(src)
        cycle = find_cycle(graph)
        if cycle:
            print(f"{src}: top-level modules import each other in a cycle: {' -> '.join(cycle)}")
            failed = True
        else:
            print(f"{src}: {len(graph)} top-level modules, no import cycle")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
