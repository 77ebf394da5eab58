"""Requests per second through LitServe on a stand-in HPU against the same server on the CPU, side by side in one run.

    LIGHTNING_HPU_BACKEND=cpu python benchmarks/serving.py [--requests 64] [--concurrency 8] [--rounds 5]

The same LitServe server (one inference worker, a small MLP, no batching) runs twice at once, each in a process of its
own: ``accelerator="hpu"`` (the worker bound to its HPU module by lightning-hpu) and ``accelerator="cpu"``. Both are
warmed up, then each round sends ``--requests`` requests, ``--concurrency`` at a time, to one server and then the
other, so a busy moment of a shared machine costs both alike; the medians of the requests per second of each and of
the rounds' ratios are printed. The stand-in's HPU computes on the CPU, so the ratio is what the serving path on the HPU
adds: the goal is a ratio of about 1 (nothing measurable of ours). On a Gaudi, the HPU's figure is the device's own.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import litserve as ls
import plots
import torch
from torch import nn


class SmallMLP(ls.LitAPI):
    def setup(self, device: str) -> None:
        torch.manual_seed(0)
        self.model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 8)).to(device).eval()
        self.device_name = device

    def decode_request(self, request):  # type: ignore[no-untyped-def]  # LitServe reads an annotation as a schema
        return torch.tensor(request["x"], dtype=torch.float32, device=self.device_name)

    def predict(self, x: torch.Tensor) -> list[float]:
        with torch.no_grad():
            return self.model(x).cpu().tolist()  # type: ignore[no-any-return]

    def encode_response(self, output: list[float]) -> dict[str, Any]:
        return {"y": output}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _post(port: int, row: list[float]) -> None:
    body = json.dumps({"x": row}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/predict", data=body,
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=120) as response:
        response.read()


class Server:
    """One LitServe server on ``accelerator`` in a process of its own, started and stopped with ``with``."""

    def __init__(self, accelerator: str) -> None:
        self.accelerator = accelerator
        self.port = _free_port()
        self.process: subprocess.Popen[str] | None = None

    def __enter__(self) -> Server:
        self.process = subprocess.Popen([sys.executable, __file__, "--serve", self.accelerator, str(self.port)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
        deadline = time.monotonic() + 600
        while True:
            if self.process.poll() is not None or time.monotonic() > deadline:
                error = self.process.communicate()[1][-2000:]
                raise SystemExit(f"the {self.accelerator} server did not start: {error}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=5) as response:
                    if response.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)

    def __exit__(self, *exc_info: object) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def requests_per_second(self, pool: ThreadPoolExecutor, requests: int) -> float:
        """Time ``requests`` requests sent through ``pool`` (as many at a time as it has threads)."""
        row = [0.1] * 64
        start = time.perf_counter()
        list(pool.map(lambda _: _post(self.port, row), range(requests)))
        return requests / (time.perf_counter() - start)


def compare(requests: int, concurrency: int, rounds: int) -> dict[str, list[float]]:
    """Both servers up at once, timed in alternating rounds (so a busy moment of the machine costs both alike)."""
    rates: dict[str, list[float]] = {"hpu": [], "cpu": []}
    with Server("hpu") as hpu, Server("cpu") as cpu, ThreadPoolExecutor(concurrency) as pool:
        for server in (hpu, cpu):
            server.requests_per_second(pool, concurrency * 2)  # warm-up
        for _ in range(rounds):
            for server in (hpu, cpu):
                rates[server.accelerator].append(server.requests_per_second(pool, requests))
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--serve", nargs=2, metavar=("ACCELERATOR", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        accelerator, port = args.serve
        ls.LitServer(SmallMLP(), accelerator=accelerator, devices=1).run(port=int(port), generate_client_file=False)
        return
    if os.environ.get("LIGHTNING_HPU_BACKEND") != "cpu":
        print("(no LIGHTNING_HPU_BACKEND=cpu: the HPU is a Gaudi's, if there is one)")
    rates = compare(args.requests, args.concurrency, args.rounds)
    ratios = [hpu / cpu for hpu, cpu in zip(rates["hpu"], rates["cpu"], strict=True)]
    hpu_rate, cpu_rate, ratio = (statistics.median(values) for values in (rates["hpu"], rates["cpu"], ratios))
    print(f"{args.requests} requests a round, {args.concurrency} at a time, one LitServe worker, {args.rounds} rounds"
          " alternating the two servers (medians):")  # fmt: skip
    print(f"  hpu {hpu_rate:8.1f} requests/s   cpu {cpu_rate:8.1f} requests/s   ratio {ratio:.2f}"
          f" (rounds: {', '.join(f'{r:.2f}' for r in ratios)})")  # fmt: skip
    plots.bars("serving", "Requests per second through LitServe", "requests/s", ["one worker"],
               {"hpu (stand-in)": [hpu_rate], "cpu": [cpu_rate]})  # fmt: skip


if __name__ == "__main__":
    main()
