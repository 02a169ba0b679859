# SPDX-License-Identifier: GPL-2.0
# A small PyTorch CPU training loop for tests/e2e/run-torch.sh: an MLP,
# SGD, cross entropy, .item() on the CPU loss each step (a CPU .item()
# must not be reported as CUDA sync). Two intra-op threads, so the
# OpenMP pool has a worker that waits between parallel regions.
# argv[1]: seconds of training (after the import).
import sys
import time

import torch


def main(seconds):
    torch.manual_seed(0)
    torch.set_num_threads(2)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(128, 256)
    y = torch.randint(0, 10, (128,))
    end = time.time() + seconds
    steps = 0
    while time.time() < end:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        loss.item()
        steps += 1
    print("steps", steps, "threads", torch.get_num_threads())


main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.5)
