#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Point comments that cite the old out-of-tree notes at docs/.

The code was written against design notes kept outside the repository
(DESIGN.md, STYLE.md, reference/*.md, anchors-and-speed.md). Their content
now lives in docs/, with the same section numbers where the code cites
them by number:

  reference/perf-data-format.md      -> docs/perf-data-format.md
  reference/cpython-perf-support.md  -> docs/cpython-perf.md
  reference/pyspy-formats.md         -> docs/pyspy-formats.md
  STYLE.md §N                        -> docs/conventions.md §N
  DESIGN.md "Output contract"        -> docs/output.md
  DESIGN.md "Dependencies"           -> docs/design.md "Dependencies"
  anchors-and-speed.md B.4 / B.5 / B.1 -> docs/design.md §6.1 / §6.2 / §6.2
  a bare "reference §N"              -> the docs/ file of the notes that
                                        file's comments draw on (below)
  libconv/NAME.c (before the folders)  -> libconv/STAGE/NAME.c

Only the citation text changes. The rewrite is idempotent, so it can be
run again after merging branches that add old-style citations:

  python3 tests/lint/rewrite-citations.py          # rewrite in place
  python3 tests/lint/rewrite-citations.py --check  # list, change nothing

tests/lint/run-citations.sh then checks that every citation resolves.
"""
import os
import re
import subprocess
import sys

ROOTS = ["libconv", "tools", "tests", "include", "scripts", "bench",
         "Makefile", "README.md", "CONTRIBUTING.md", "libperfspy.map"]
SKIP = {"tests/lint/rewrite-citations.py", "tests/lint/citations.py"}

DOC = {
    "perf-data-format.md": "docs/perf-data-format.md",
    "cpython-perf-support.md": "docs/cpython-perf.md",
    "pyspy-formats.md": "docs/pyspy-formats.md",
}

# Which notes a bare "reference §N" means, by the citing file.
BARE_REFERENCE = [
    ("libconv/frames/jit", "docs/cpython-perf.md"),
    ("tests/unit/test_jit.c", "docs/cpython-perf.md"),
    ("tests/unit/fixtures/jit/", "docs/cpython-perf.md"),
    ("tests/e2e/run-python.sh", "docs/cpython-perf.md"),
    ("libconv/frames/", "docs/perf-data-format.md"),
    ("libconv/perfdata/", "docs/perf-data-format.md"),
    ("tests/unit/test_reader.c", "docs/perf-data-format.md"),
    ("tests/unit/fixtures/tracing/", "docs/perf-data-format.md"),
    ("tests/e2e/run-record-modes.sh", "docs/perf-data-format.md"),
]

# Between a word and the § on the next line of a comment.
WRAP = r"(\s*(?:\n[ \t]*(?:\*|#|//)?[ \t]*)?)"

RULES = [
    # Paths to the old notes, with or without their folder.
    (re.compile(r"(?:/work/shared/|shared )?reference/(perf-data-format|"
                r"cpython-perf-support|pyspy-formats)\.md"),
     lambda m: DOC[m.group(1) + ".md"]),
    (re.compile(r"(?<![\w/.-])(perf-data-format|cpython-perf-support|"
                r"pyspy-formats)\.md"),
     lambda m: DOC[m.group(1) + ".md"]),
    # The performance survey: its B.4 (targets) and B.5 (observations)
    # are docs/design.md §6.1 and §6.2; B.1's figure is in §6.2 point 1.
    (re.compile(r"(?:reference/)?anchors-and-speed\.md" + WRAP + r"B\.4"),
     lambda m: "docs/design.md" + m.group(1) + "§6.1"),
    (re.compile(r"(?:reference/)?anchors-and-speed\.md" + WRAP + r"B\.[15]"),
     lambda m: "docs/design.md" + m.group(1) + "§6.2"),
    (re.compile(r"\(DESIGN\.md, anchors B\.4\)"),
     lambda m: "(docs/design.md §6.1)"),
    # The design notes.
    (re.compile(r"DESIGN\.md's output contract"),
     lambda m: "the output contract of docs/output.md"),
    (re.compile(r"DESIGN\.md \"Output contract\""),
     lambda m: "docs/output.md"),
    (re.compile(r"DESIGN\.md \"Dependencies\""),
     lambda m: "docs/design.md \"Dependencies\""),
    # The style notes.
    (re.compile(r"STYLE\.md(?= §)"), lambda m: "docs/conventions.md"),
]

BARE = re.compile(r"\breference" + WRAP + r"(?=§)")


def files():
    try:
        out = subprocess.run(["git", "ls-files", "--"] + ROOTS, check=True,
                             capture_output=True, text=True).stdout
        paths = out.split()
    except (OSError, subprocess.CalledProcessError):
        paths = []
        for r in ROOTS:
            if os.path.isfile(r):
                paths.append(r)
            for d, _, fs in os.walk(r):
                paths += [os.path.join(d, f) for f in fs]
    return sorted(p for p in paths if p not in SKIP and os.path.isfile(p))


def bare_target(path):
    for prefix, doc in BARE_REFERENCE:
        if path.startswith(prefix):
            return doc
    return None


# libconv/NAME.c from before the split into stage folders (commit
# 9b479de) -> libconv/STAGE/NAME.c, when exactly one folder has it.
FLAT = re.compile(r"(?<![\w/.-])libconv/([\w-]+\.[ch])\b")


def unflatten(m):
    name = m.group(1)
    if os.path.exists(os.path.join("libconv", name)):
        return m.group(0)
    hits = sorted(d for d in os.listdir("libconv")
                  if os.path.exists(os.path.join("libconv", d, name)))
    return f"libconv/{hits[0]}/{name}" if len(hits) == 1 else m.group(0)


def rewrite(path, text):
    for rx, fn in RULES:
        text = rx.sub(fn, text)
    text = FLAT.sub(unflatten, text)
    doc = bare_target(path)
    if doc:
        text = BARE.sub(lambda m: doc + m.group(1), text)
    return text


def main():
    check = "--check" in sys.argv[1:]
    # Paths are relative to the repository root.
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    changed = 0
    for path in files():
        try:
            with open(path, encoding="utf-8") as f:
                old = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        new = rewrite(path, old)
        if new == old:
            continue
        changed += 1
        n = sum(1 for a, b in zip(old.splitlines(), new.splitlines()) if a != b)
        print(f"{path}: {n} line(s)")
        if not check:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
    print(f"{changed} file(s) {'would change' if check else 'rewritten'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
