# SPDX-License-Identifier: GPL-2.0
"""Start-up workload for bench/run-startup.sh (issue 16): import torch,
which maps libtorch_cpu and its dependencies (hundreds of MB of code and
symbols), then run small tensor operations for SECONDS (argv[1], default
0.5). Recorded at a low frequency, the profile has about 100 samples, most
of them in the import: the conversion's cost is then its per-DSO start-up,
not the samples."""
import sys
import time

import torch

end = time.time() + (float(sys.argv[1]) if len(sys.argv) > 1 else 0.5)
a = torch.randn(64, 64)
while time.time() < end:
    b = a @ a
    c = torch.relu(b).sum()
