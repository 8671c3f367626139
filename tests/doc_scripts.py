#!/usr/bin/env python3
"""The recipes a page shows run as written.

A page marks a block that must run whole, in order, as ```sh-script (plain ```sh blocks
are single commands, checked by tests/readme_commands.py). Each such block runs as one
bash script with `set -euo pipefail`, from the repository root; it must exit 0 within
10 minutes.

    python3 tests/doc_scripts.py PAGE [PAGE ...]   run every sh-script block of the pages
    python3 tests/doc_scripts.py --self-test       a failing block is reported as failing
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def scripts(text):
    """(first line number, script) of every ```sh-script block."""
    out, lines, start = [], None, 0
    for n, line in enumerate(text.splitlines(), 1):
        fence = re.match(r"^\s*```(\S*)", line)
        if fence and lines is None and fence.group(1) == "sh-script":
            lines, start = [], n + 1
        elif fence and lines is not None:
            out.append((start, "\n".join(lines) + "\n"))
            lines = None
        elif lines is not None:
            lines.append(line)
    return out


def run(script):
    """None when it ran; else what went wrong."""
    try:
        r = subprocess.run(["bash", "-c", "set -euo pipefail\n" + script], cwd=ROOT,
                           capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return "did not finish in 600 s"
    if r.returncode != 0:
        return f"exit {r.returncode}: {(r.stderr or r.stdout).strip()[-600:]}"
    sys.stdout.write(r.stdout)
    return None


def check(path):
    with open(path) as f:
        found = scripts(f.read())
    if not found:
        print(f"{path}: no sh-script block")
        return 1
    failed = 0
    for line, script in found:
        why = run(script)
        if why:
            failed += 1
            print(f"{path}:{line}: the sh-script block failed: {why}")
    print(f"{path}: {len(found) - failed} of {len(found)} sh-script blocks ran")
    return 1 if failed else 0


def self_test():
    with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
        f.write("text\n```sh-script\ntrue\nfalse\ntrue\n```\n")
    try:
        bad = check(f.name)
    finally:
        os.unlink(f.name)
    if bad != 1:
        print("self-test: a failing block was not reported")
        return 1
    print("self-test: a failing block is reported")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    if not sys.argv[1:]:
        sys.exit(__doc__)
    sys.exit(max(check(p) for p in sys.argv[1:]))
