#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn `make -n V=1` output (stdin) into a compile_commands.json (stdout).

Each shell line that compiles a C file becomes one entry per source file
on it (clang's JSON Compilation Database format: directory, file,
arguments). Link-only and other lines are skipped.
"""
import json
import os
import shlex
import sys


def entries(lines, cwd):
    for line in lines:
        for part in line.split("&&"):
            try:
                argv = shlex.split(part)
            except ValueError:
                continue
            if not argv or not (argv[0].endswith("cc") or argv[0].endswith("gcc")
                                or argv[0].endswith("clang")):
                continue
            srcs = [a for a in argv[1:] if a.endswith(".c")]
            for src in srcs:
                # One entry per file: the other sources on a test's link
                # line are dropped from its arguments.
                args = [a for a in argv if a == src or not a.endswith(".c")]
                yield {"directory": cwd, "file": src, "arguments": args}


def main():
    cwd = os.getcwd()
    seen = {}
    # `make -n` prints recipes with their backslash-newlines kept.
    text = sys.stdin.read().replace("\\\n", " ")
    for e in entries(text.splitlines(), cwd):
        seen.setdefault(e["file"], e)
    if not seen:
        sys.exit("compile-commands.py: no compiler command in the input")
    json.dump(sorted(seen.values(), key=lambda e: e["file"]), sys.stdout,
              indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
