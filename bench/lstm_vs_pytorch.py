#!/usr/bin/python3
"""`weft train --model lstm` against the same training in PyTorch (Debian's python3-torch, which
scripts/install-bench-deps installs; CI does not run this).

Both train LSTM(128) over the 28 rows of each Fashion-MNIST image, then a 10-way linear layer, with
Adam from 5e-3 decayed along a cosine to 0, batch 128, one epoch, on the same number of threads.
Each side runs --runs times, alternately, each run a fresh process; printed: the median training
examples/s of each side (PyTorch: the training loop over batches already in memory; weft: fit(),
its input pipeline included) and weft / PyTorch.

    bench/lstm_vs_pytorch.py [--weft build/weft] [--runs 3] [--threads 2]
"""
import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def torch_run(threads):
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    root = os.environ.get("WEFT_DATA_DIR", "/usr/share/datasets") + "/fashion-mnist/"
    x = torch.from_numpy(idx(root + "train-images-idx3-ubyte.gz").astype(np.float32) / 255.0)
    y = torch.from_numpy(idx(root + "train-labels-idx1-ubyte.gz").astype(np.int64))

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(28, 128, batch_first=True)
            self.logits = torch.nn.Linear(128, 10)

        def forward(self, images):
            out, _ = self.lstm(images)
            return self.logits(out[:, -1])

    model = Model()
    batch = 128
    steps = (len(x) + batch - 1) // batch
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    loss_fn = torch.nn.CrossEntropyLoss()
    order = torch.randperm(len(x))
    start = time.perf_counter()
    for s in range(steps):
        idx_s = order[s * batch:(s + 1) * batch]
        opt.zero_grad()
        loss = loss_fn(model(x[idx_s]), y[idx_s])
        loss.backward()
        opt.step()
        schedule.step()
    return len(x) / (time.perf_counter() - start)


def weft_run(weft, threads):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "m.json")
        subprocess.run([weft, "train", "--model", "lstm", "--epochs", "1", "--quiet", "--threads",
                        str(threads), "--metrics-json", out], check=True)
        with open(out) as f:
            return json.load(f)["train_examples_per_sec"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--weft", default=os.path.join(os.path.dirname(__file__), "../build/weft"))
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--torch-run", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.torch_run:
        print(torch_run(a.threads))
        return
    weft, torch = [], []
    for _ in range(a.runs):
        weft.append(weft_run(a.weft, a.threads))
        out = subprocess.run([sys.executable, __file__, "--torch-run", "--threads",
                              str(a.threads)], check=True, capture_output=True, text=True)
        torch.append(float(out.stdout))
    w, t = statistics.median(weft), statistics.median(torch)
    print(f"weft train --model lstm: {w:.0f} examples/s (runs {', '.join(f'{v:.0f}' for v in weft)})")
    print(f"PyTorch {__import__('torch').__version__} nn.LSTM: {t:.0f} examples/s "
          f"(runs {', '.join(f'{v:.0f}' for v in torch)})")
    print(f"ratio weft / PyTorch: {w / t:.2f}")


if __name__ == "__main__":
    main()
