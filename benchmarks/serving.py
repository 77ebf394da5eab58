"""Requests per second through LitServe on a stand-in HPU against the same server on the CPU, side by side in one run.

    LIGHTNING_HPU_BACKEND=cpu python benchmarks/serving.py [--requests 64] [--concurrency 8]

The same LitServe server (one inference worker, a small MLP, no batching) starts twice as a process of its own:
``accelerator="hpu"`` (the worker bound to its HPU module by lightning-hpu) and ``accelerator="cpu"``. Each is
warmed up, then answers ``--requests`` requests sent ``--concurrency`` at a time; the requests per second of each and
their ratio are printed. The stand-in's HPU computes on the CPU, so the ratio is what the serving path on the HPU
adds: the goal is a ratio of about 1 (nothing measurable of ours). On a Gaudi, the HPU's figure is the device's own.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
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


def requests_per_second(accelerator: str, requests: int, concurrency: int) -> float:
    """Start the server on ``accelerator``, warm it up, time ``requests`` requests; stop it."""
    port = _free_port()
    server = subprocess.Popen([sys.executable, __file__, "--serve", accelerator, str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 600
        while True:
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the {accelerator} server did not start: {server.communicate()[1][-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        row = [0.1] * 64
        with ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(lambda _: _post(port, row), range(concurrency * 2)))  # warm-up
            start = time.perf_counter()
            list(pool.map(lambda _: _post(port, row), range(requests)))
            return requests / (time.perf_counter() - start)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--serve", nargs=2, metavar=("ACCELERATOR", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        accelerator, port = args.serve
        ls.LitServer(SmallMLP(), accelerator=accelerator, devices=1).run(port=int(port), generate_client_file=False)
        return
    if os.environ.get("LIGHTNING_HPU_BACKEND") != "cpu":
        print("(no LIGHTNING_HPU_BACKEND=cpu: the HPU is a Gaudi's, if there is one)")
    rates = {
        accelerator: requests_per_second(accelerator, args.requests, args.concurrency) for accelerator in ("hpu", "cpu")
    }
    print(f"{args.requests} requests, {args.concurrency} at a time, one LitServe worker:")
    ratio = rates["hpu"] / rates["cpu"]
    print(f"  hpu {rates['hpu']:8.1f} requests/s   cpu {rates['cpu']:8.1f} requests/s   ratio {ratio:.2f}")
    plots.bars("serving", "Requests per second through LitServe", "requests/s", ["one worker"],
               {"hpu (stand-in)": [rates["hpu"]], "cpu": [rates["cpu"]]})  # fmt: skip


if __name__ == "__main__":
    main()
