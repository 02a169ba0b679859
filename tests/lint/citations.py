#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check that what comments and docs cite exists in the repository.

For every tracked source, script, test fixture and document:
  1. A cited Markdown file (`docs/output.md`, `README.md`, or a link
     `[text](file.md)` in a document) must exist: a name with a folder
     relative to the repository root (or, for Markdown links, to the
     citing file), a bare name in the root or beside the citing file. The
     old out-of-tree notes (DESIGN.md, STYLE.md, reference/*.md,
     anchors-and-speed.md) therefore fail; tests/lint/rewrite-citations.py
     turns them into docs/ citations.
  2. A cited repository path (`libconv/...`, `tests/...`, `scripts/...`,
     ...; not patterns such as `test_<module>.c` or `run-*.sh`, and not
     the kernel tree's `tools/perf/...`) must exist.
  3. A section `§N.M` must be a numbered heading of the docs/ file it
     belongs to: the nearest citation before it (a docs/ file, or an
     outside source such as `RFC 8259`, `DWARF 5`, `perf.data-file-
     format.txt`, which is not checked). A § with no citation before it
     must be a heading of one of the docs/ files the same file cites, or
     of any docs/ file. Ranges (`§1.1-§1.8`, `§1.5-1.6`) check both ends.
     `docs/x.md "Name"` must name a heading of x.md.
Usage: citations.py [ROOT]   (prints each bad citation; exit 1 if any)
"""
import os
import re
import subprocess
import sys

SCAN = ["libconv", "tools", "tests", "include", "scripts", "bench", "docs",
        "Makefile", "README.md", "CONTRIBUTING.md", "libperfspy.map",
        ".ci", ".clang-format", ".shellcheckrc"]
# Files that name the old notes on purpose.
EXEMPT = {"tests/lint/rewrite-citations.py", "tests/lint/citations.py"}
REPO_DIRS = ("libconv/", "tools/", "tests/", "include/", "scripts/",
             "bench/", "docs/")
# Paths under those names that belong to the kernel or CPython trees.
FOREIGN = ("tools/perf/", "tools/lib/", "tools/include/", "include/uapi/",
           "include/linux/", "include/internal/", "include/perf/",
           "scripts/Makefile")

MD = re.compile(r"(?<![\w/.:-])((?:[\w.-]+/)*[\w.-]+\.md)\b")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
PATH = re.compile(r"(?<![\w/.$-])((?:libconv|tools|tests|include|scripts|bench|"
                  r"docs)/[\w./+*<>{}$%-]*[\w/*>}%])")
DOC = re.compile(r"(?<![\w/.-])(docs/[\w.-]+\.md)")
EXTERNAL = re.compile(r"RFC ?\d+|DWARF ?\d|ABI|LSB|[\w.-]+\.(?:txt|rst|S|c|h)\b"
                      r"|perf_event\.h|C11|C99|POSIX|ISO")
SECT = re.compile(r"§\s*(\d+(?:\.\d+)*)(?:\s*-\s*§?\s*(\d+(?:\.\d+)*))?")
HEADING = re.compile(r"^#+\s+(\d+(?:\.\d+)*)\.?\s+(.*)$")
NAMED = re.compile(r"(docs/[\w.-]+\.md)\s*\"([^\"]+)\"")
REACH = 300  # characters a § may sit after the citation it belongs to


def tracked(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "--"] + SCAN,
                             check=True, capture_output=True,
                             text=True).stdout.split()
        # Files added but not yet committed count too.
        new = subprocess.run(["git", "-C", root, "ls-files", "--others",
                              "--exclude-standard", "--"] + SCAN, check=True,
                             capture_output=True, text=True).stdout.split()
        return sorted(set(out + new))
    except (OSError, subprocess.CalledProcessError):
        paths = []
        for s in SCAN:
            p = os.path.join(root, s)
            if os.path.isfile(p):
                paths.append(s)
            for d, _, fs in os.walk(p):
                paths += [os.path.relpath(os.path.join(d, f), root) for f in fs]
        return sorted(paths)


def doc_sections(root, doc):
    nums, names = set(), []
    try:
        with open(os.path.join(root, doc), encoding="utf-8") as f:
            for line in f:
                m = HEADING.match(line.rstrip("\n"))
                if m:
                    nums.add(m.group(1))
                    names.append(m.group(2).lower())
                elif line.startswith("#"):
                    names.append(line.lstrip("#").strip().lower())
    except OSError:
        return None
    return nums, names


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    files = [p for p in tracked(root) if p not in EXEMPT and
             os.path.isfile(os.path.join(root, p))]
    docs = sorted(p for p in files if p.startswith("docs/") and p.endswith(".md"))
    secs = {d: doc_sections(root, d) for d in docs}
    bad = []

    def exists(p):
        return os.path.exists(os.path.join(root, p))

    for path in files:
        try:
            with open(os.path.join(root, path), encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        here = os.path.dirname(path)

        def where(pos):
            return f"{path}:{text.count(chr(10), 0, pos) + 1}"

        # 1. Markdown files.
        for m in MD.finditer(text):
            name = m.group(1)
            before = text[max(0, m.start() - 8):m.start()]
            if "://" in text[max(0, m.start() - 80):m.start()] and \
                    not re.search(r"\s", text[text.rfind("://", 0, m.start()):m.start()]):
                continue  # part of a URL
            if "/" in name:
                ok = exists(name) or exists(os.path.join(here, name))
            else:
                ok = exists(name) or exists(os.path.join(here, name))
            if not ok and not before.endswith("]("):
                bad.append(f"{where(m.start())}: cites {name}, which is not in the repository")
        if path.endswith(".md"):
            for m in LINK.finditer(text):
                target = m.group(1)
                if "://" in target or target.startswith("mailto:"):
                    continue
                if not exists(os.path.normpath(os.path.join(here, target))):
                    bad.append(f"{where(m.start())}: link to {target}, which does not exist")

        # 2. Repository paths.
        for m in PATH.finditer(text):
            p = m.group(1).rstrip(".")
            if p.endswith(".md"):
                continue  # checked above
            if p.startswith(FOREIGN) or re.search(r"[<>*{}$%]|\.\.\.", p) or \
                    re.search(r"(^|/)[A-Z]{3,}(\.|/|$)", p):
                continue  # a pattern or a placeholder, not a path
            if not (exists(p) or exists(p.rstrip("/"))):
                bad.append(f"{where(m.start())}: cites {p}, which does not exist")

        # 3. Sections.
        anchors = [(m.start(), m.end(), m.group(1)) for m in DOC.finditer(text)]
        if path.startswith("docs/"):
            # Documents cite each other by bare name: `output.md §2`.
            anchors += [(m.start(), m.end(), "docs/" + m.group(1))
                        for m in MD.finditer(text)
                        if "/" not in m.group(1) and "docs/" + m.group(1) in secs]
        anchors += [(m.start(), m.end(), None) for m in EXTERNAL.finditer(text)]
        anchors.sort()
        cited = sorted({a[2] for a in anchors if a[2]})
        for m in SECT.finditer(text):
            prev = [a for a in anchors if a[1] <= m.start()]
            near = prev[-1] if prev and m.start() - prev[-1][1] <= REACH else None
            if near and near[2] is None:
                continue  # an outside source's section
            if near:
                choices = [near[2]]
            else:
                choices = cited or docs
            if path in secs and path not in choices:
                choices = choices + [path]  # a document's own sections
            for num in filter(None, m.groups()):
                ok = any(secs.get(d) and num in secs[d][0] for d in choices)
                if not ok:
                    bad.append(f"{where(m.start())}: §{num} is not a section of "
                               f"{' or '.join(choices)}")
        for m in NAMED.finditer(text):
            doc, name = m.group(1), m.group(2).lower()
            s = secs.get(doc)
            if s and not any(name in h for h in s[1]):
                bad.append(f"{where(m.start())}: {doc} has no section \"{m.group(2)}\"")

    for b in bad:
        print(b)
    print(f"citations: {len(files)} files, {len(bad)} bad citation(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
