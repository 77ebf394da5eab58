"""LitGPT's command line on HPUs: ``litgpt <command> ...`` started from a file that imports lightning_hpu.

LitGPT builds its ``L.Fabric`` (and, for several devices, its own ``FSDPStrategy``) inside each command; importing
lightning_hpu first registers the HPU with Lightning, so ``accelerator="auto"`` picks the Gaudi, LitGPT's strategy
object runs as ``HPUFSDPStrategy`` and its ``torch.compile`` uses ``hpu_backend`` (docs/guide/litgpt.md). Lightning
starts the other ranks by running this file again, which is why ``python -c`` cannot stand in for it.

On a Gaudi:          python examples/litgpt_cli.py pretrain pythia-14m --devices 8 ...
Without a Gaudi:     LIGHTNING_HPU_BACKEND=cpu python examples/litgpt_cli.py generate checkpoints/... --prompt "Hi"
"""

from litgpt.__main__ import main

import lightning_hpu  # noqa: F401  # registers the HPU with Lightning before LitGPT builds its Fabric

if __name__ == "__main__":
    main()
