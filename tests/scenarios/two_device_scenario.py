"""Several two-rank scenario scripts in one launch: each rank imports Lightning once for all of them, not once each.

``python two_device_scenario.py OUT_DIR NAME [NAME ...]`` (with ``LIGHTNING_HPU_CPU_DEVICES=2``) runs the ``main``
of each named scenario module in turn, writing under ``OUT_DIR/NAME``. The first Trainer or Fabric starts rank 1,
which re-runs this same command line, so both ranks run the same scenarios in the same order; the later ones reuse
the process group. With ``LIGHTNING_HPU_TEST_NAMESPACE=standalone`` they run against ``pytorch_lightning`` and
``lightning_fabric`` (``namespaces.py``). A scenario that compiles resets TorchDynamo and counts from its own start;
the first error stops the
launch.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.helpers.namespaces import import_scenario

#: The scenario modules (in this directory) by the name given on the command line.
SCENARIOS = {
    "compile": "compile_scenario",
    "bucketing": "bucketing_ddp_scenario",
    "fabric": "fabric_scenario",
    "context_parallel": "context_parallel_scenario",
    "sharded": "sharded_scenario",
    "streams": "stream_scenario",
    "fsdp_compile": "fsdp_compile_scenario",
    "recipe_cache": "recipe_cache_scenario",
}


def main() -> None:
    out, names = Path(sys.argv[1]), sys.argv[2:]
    unknown = sorted(set(names) - set(SCENARIOS))
    if unknown:
        raise SystemExit(f"unknown scenarios {unknown}: choose from {sorted(SCENARIOS)}")
    for name in names:
        (out / name).mkdir(parents=True, exist_ok=True)
        import_scenario(SCENARIOS[name]).main(out / name)


if __name__ == "__main__":
    main()
