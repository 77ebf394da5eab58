"""Serving a model on HPUs with LitServe: one inference worker per HPU, each bound to its own HPU module.

Installed, lightning-hpu teaches LitServe ``accelerator="hpu"`` (and ``"auto"`` picks the HPUs on a Gaudi node); the
server below is plain LitServe. On a Gaudi, all 8 HPUs, serving on port 8000 until Ctrl+C::

    python examples/serve_hpu.py --devices 8

``--demo N`` starts the same server in a process of its own, sends it N requests at once, checks every answer against
the CPU's and says which HPU module answered, then stops it. Without a Gaudi, on two stand-in HPUs::

    LIGHTNING_HPU_BACKEND=cpu LIGHTNING_HPU_CPU_DEVICES=2 python examples/serve_hpu.py --devices 2 --demo 8
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
import torch
from torch import nn

from lightning_hpu import run_script


def make_model() -> nn.Module:
    """A small classifier with the same weights in every process (a real server loads a checkpoint here)."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))


class Classifier(ls.LitAPI):
    def setup(self, device: str) -> None:
        # device is "hpu": the worker's process is bound to one HPU module, which LitServe's worker drives.
        self.model = make_model().to(device).eval()
        self.module = os.environ.get("HLS_MODULE_ID")  # the module the bridge opened for this worker

    def decode_request(self, request):  # type: ignore[no-untyped-def]  # LitServe reads an annotation as a schema
        return torch.tensor(request["features"], dtype=torch.float32)

    def batch(self, inputs: list[torch.Tensor]) -> torch.Tensor:
        return torch.stack(inputs)

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return self.model(x.to(next(self.model.parameters()).device)).softmax(dim=-1).cpu()

    def unbatch(self, output: torch.Tensor) -> list[torch.Tensor]:
        return list(output)

    def encode_response(self, output: torch.Tensor) -> dict[str, Any]:
        return {"probabilities": output.tolist(), "hpu_module": self.module}


def demo(args: argparse.Namespace) -> None:
    """Start the server as its own process, send ``args.demo`` requests at once, check the answers, stop it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, __file__, "--devices", str(args.devices), "--port", str(port)]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600
        while True:
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"error: the server did not start: {server.communicate()[1][-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        generator = torch.Generator().manual_seed(1)
        features = [torch.randn(8, generator=generator).tolist() for _ in range(args.demo)]

        def ask(row: list[float]) -> dict[str, Any]:
            body = json.dumps({"features": row}).encode()
            request = urllib.request.Request(f"http://127.0.0.1:{port}/predict", data=body,
                                             headers={"Content-Type": "application/json"})  # fmt: skip
            with urllib.request.urlopen(request, timeout=120) as response:
                return json.loads(response.read())  # type: ignore[no-any-return]

        with ThreadPoolExecutor(args.demo) as pool:
            answers = list(pool.map(ask, features))
        with torch.no_grad():
            expected = make_model()(torch.tensor(features)).softmax(dim=-1)
        got = torch.tensor([answer["probabilities"] for answer in answers])
        if not torch.allclose(got, expected, atol=1e-5):
            raise SystemExit("error: the HPUs' answers differ from the CPU's")
        modules = sorted({str(answer["hpu_module"]) for answer in answers})
        print(f"{len(answers)} requests answered by the workers of HPU modules {', '.join(modules)}: as on the CPU")
    finally:
        server.send_signal(signal.SIGINT)  # as Ctrl+C: LitServe stops its workers
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", type=int, default=1, help="HPUs to serve on (one worker process each)")
    parser.add_argument("--workers-per-device", type=int, default=1)
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--demo", type=int, default=0, metavar="N", help="start, send N requests, check, stop")
    args = parser.parse_args()
    # LitServe's own classes: `devices` is read (and refused in one sentence) here, before any worker starts.
    api = Classifier(max_batch_size=8, batch_timeout=0.01)
    server = ls.LitServer(api, accelerator="hpu", devices=args.devices, workers_per_device=args.workers_per_device)
    if args.demo:
        demo(args)
    else:
        server.run(port=args.port, generate_client_file=False)


if __name__ == "__main__":
    run_script(main)
