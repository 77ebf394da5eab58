"""More of the bridge's Python API, as optimum-habana calls it: ``utils.experimental.hpu`` and
``detect_recompilation``, the graph helpers (``copy_to``, ``CachedParams``, ``TensorPacker``), ``hpex.kernels``'s
``CTCLoss``/``CustomSoftmax``/``Fp8Ops``, ``hpex.optimizers.distributed.FusedAdamW`` and the ``compile_backend``
configuration module; each against a computation written out here.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
import torch

import gaudi_standin.bridge.habana_frameworks.torch  # noqa: F401 (the device and torch.ops.hpu)
from gaudi_standin.bridge.habana_frameworks.torch.dynamo.compile_backend import config as compile_config
from tests.helpers.dynamo import reset_dynamo

HPU = torch.device("hpu")


def _config() -> Any:
    """The configuration module, with the methods torch's config modules gain at run time (``patch``)."""
    return compile_config


def test_compile_backend_configuration_flags() -> None:
    assert compile_config.configuration_flags["keep_input_mutations"] is compile_config.keep_input_mutations
    before = compile_config.inference
    try:
        compile_config.configuration_flags["inference"] = not before
        assert compile_config.inference is (not before)
    finally:
        compile_config.inference = before
    with _config().patch(use_graph_freezing=True):
        assert compile_config.configuration_flags["use_graph_freezing"] is True
    with pytest.raises(AttributeError):
        compile_config.configuration_flags["no_such_flag"] = 1
    served = importlib.import_module("habana_frameworks.torch.dynamo.compile_backend.config")
    assert served is compile_config


def test_keep_input_mutations_setting_reaches_hpu_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    from torch._dynamo.backends import common

    real = common.aot_autograd

    def spy(**kwargs: object) -> object:
        if "keep_inference_input_mutations" in kwargs:  # hpu_backend's call (torch calls it too)
            seen.append(bool(kwargs["keep_inference_input_mutations"]))
        return real(**kwargs)

    monkeypatch.setattr(common, "aot_autograd", spy)
    for keep in (False, True):
        reset_dynamo()
        with _config().patch(keep_input_mutations=keep):
            torch.compile(lambda x: x.add_(1), backend="hpu_backend")(torch.zeros(2, device=HPU))
        assert seen[-1] is keep  # the last call: hpu_backend's, for this compilation
