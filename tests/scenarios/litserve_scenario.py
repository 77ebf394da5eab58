"""A LitServe server as a user writes it, with no lightning_hpu import: ``python litserve_scenario.py ACCELERATOR
DEVICES PORT``. Two endpoints, each with its own inference workers: ``/predict`` batches (up to 4 requests) and
``/stream`` streams three answers per request. Every answer says where it was computed (the device ``setup`` got, the
device of the weights, the HPU module the process is bound to, its pid), so the test can check each worker's HPU.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import litserve as ls
import torch

#: The model every worker builds: the same weights on every device, so that answers can be compared with the CPU's.
IN_FEATURES, OUT_FEATURES = 4, 3


def make_model() -> torch.nn.Linear:
    torch.manual_seed(0)
    return torch.nn.Linear(IN_FEATURES, OUT_FEATURES)


class Where(ls.LitAPI):
    """Builds the model on the worker's device and tells where it runs."""

    def setup(self, device: str) -> None:
        self.model = make_model().to(device)
        self.where = {
            "device": device,
            "weights": str(self.model.weight.device),
            "module": os.environ.get("HLS_MODULE_ID"),
            "pid": os.getpid(),
        }

    def decode_request(self, request):  # type: ignore[no-untyped-def]  # LitServe reads the annotation as a schema
        return torch.tensor(request["x"], dtype=torch.float32)


class Batched(Where):
    def batch(self, inputs: list[torch.Tensor]) -> torch.Tensor:
        return torch.stack(inputs)

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(0.2)  # long enough for concurrent requests to reach both workers
        with torch.no_grad():
            return self.model(x.to(self.model.weight.device)).cpu()

    def unbatch(self, output: torch.Tensor) -> list[torch.Tensor]:
        return list(output)

    def encode_response(self, output: torch.Tensor) -> dict[str, Any]:
        return {"y": output.tolist(), **self.where}


class Streamed(Where):
    def predict(self, x: torch.Tensor) -> Iterator[torch.Tensor]:
        with torch.no_grad():
            for step in range(3):
                yield self.model((x * step).to(self.model.weight.device)).cpu()

    def encode_response(self, outputs: Iterator[torch.Tensor]) -> Iterator[dict[str, Any]]:
        for output in outputs:
            yield {"y": output.tolist(), **self.where}


if __name__ == "__main__":
    accelerator, devices, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    apis = [
        Batched(max_batch_size=4, batch_timeout=0.05, api_path="/predict"),
        Streamed(stream=True, api_path="/stream"),
    ]
    server = ls.LitServer(apis, accelerator=accelerator, devices=int(devices), timeout=120)
    print(f"devices: {server.devices}", flush=True)
    server.run(port=port, generate_client_file=False)
