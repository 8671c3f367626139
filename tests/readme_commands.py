#!/usr/bin/env python3
"""Every shell command the README shows runs as written.

The README's ```sh blocks are extracted line by line (a `#` after the command starts a
comment). A `make` command is run with `make -n` (it must name a target that exists and
whose recipe expands: running `make test` from inside `make test` would only recurse, and
`make demo` itself runs shortened in `make test`, see mk/lifecycle.mk); any other command
is run as written from the repository root, and must exit 0. Blocks meant to be read, not
run, are marked ```text.

    python3 tests/readme_commands.py [README]      check a README (default: the repo's)
    python3 tests/readme_commands.py --self-test   the checker finds a planted bad command
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def commands(text):
    """The command lines of the ```sh / ```bash / ```shell blocks, with their line numbers."""
    out, in_block = [], False
    for n, line in enumerate(text.splitlines(), 1):
        fence = re.match(r"^\s*```(\S*)", line)
        if fence:
            in_block = not in_block and fence.group(1) in ("sh", "bash", "shell")
            continue
        if not in_block:
            continue
        cmd = re.split(r"\s#", line, maxsplit=1)[0].strip()
        if cmd and not cmd.startswith("#"):
            out.append((n, cmd))
    return out


def check(cmd):
    """None when `cmd` runs; else what went wrong."""
    words = shlex.split(cmd)
    if words and words[0] == "make":
        run = ["make", "-n", *words[1:]]
    else:
        run = ["bash", "-c", cmd]
    try:
        r = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return "did not finish in 600 s"
    if r.returncode != 0:
        return f"exit {r.returncode}: {(r.stderr or r.stdout).strip()[-400:]}"
    return None


def check_readme(path):
    with open(path) as f:
        found = commands(f.read())
    failed = [(n, c, why) for n, c in found if (why := check(c)) is not None]
    for n, c, why in failed:
        print(f"{os.path.relpath(path, ROOT)}:{n}: `{c}`: {why}")
    print(f"{len(found)} README commands checked, {len(failed)} failed")
    return not failed and bool(found)


def self_test():
    readme = "\n".join([
        "# t", "```sh", "make help   # a target that exists", "```",
        "```text", "make nowhere-at-all", "```",
        "```sh", "make no-such-target-here", "```",
    ])
    with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
        f.write(readme)
    try:
        found = commands(readme)
        assert [c for _, c in found] == ["make help", "make no-such-target-here"], found
        assert check("make help") is None, "an existing target is accepted"
        assert check("make no-such-target-here") is not None, "a missing target is refused"
        assert not check_readme(f.name), "a README with a bad command fails"
    finally:
        os.unlink(f.name)
    print("readme_commands self-test: a planted bad command was found")
    return True


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(0 if self_test() else 1)
    sys.exit(0 if check_readme(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "README.md")) else 1)
