# SPDX-License-Identifier: GPL-2.0
"""``python -m perfspy ARGS...`` runs the perfspy command with ARGS."""

import os
import shutil
import sys
import sysconfig
from typing import List, Optional


def executable() -> Optional[str]:
    """The perfspy executable the wheel installed (into the environment's
    scripts directory, wherever this package's RECORD says it went)."""
    try:
        from importlib import metadata
        dist = metadata.distribution("perfspy")
        for f in dist.files or []:
            if f.name == "perfspy" and f.parent.name in ("bin", "scripts"):
                p = str(dist.locate_file(f))
                if os.access(p, os.X_OK):
                    return os.path.abspath(p)
    except Exception:  # not installed from the wheel (a source tree)
        pass
    for p in (os.path.join(sysconfig.get_path("scripts"), "perfspy"),
              shutil.which("perfspy")):
        if p and os.access(p, os.X_OK):
            return p
    return None


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    exe = executable()
    if exe is None:
        sys.stderr.write("perfspy: the perfspy executable is not installed\n")
        return 127
    sys.stdout.flush()
    sys.stderr.flush()
    # exec: signals, exit status and the terminal belong to perfspy itself
    # (perfspy record's Ctrl-C in particular).
    os.execv(exe, ["perfspy"] + list(args))
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
