"""``torchrun`` restarts: each attempt's process group gets keys of its own in the agent's store.

Under ``torchrun`` the workers reuse the agent's TCP store (``TORCHELASTIC_USE_AGENT_STORE=True``), which outlives
a failed attempt, and the default process group writes the same keys in every attempt. After a restart
(``--max-restarts``), a rank can then read a peer's address from the failed attempt before the peer has written its
new one, and wait on a process that no longer exists. Prefixing the keys with the attempt number
(``TORCHELASTIC_RESTART_COUNT``) keeps the attempts apart.
"""

from __future__ import annotations

import os
from datetime import timedelta

import torch.distributed as dist


def attempt_store(timeout: timedelta | None) -> dist.Store | None:
    """A client of the agent's store whose keys belong to this attempt; ``None`` outside ``torchrun``."""
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != str(True):
        return None
    store = dist.TCPStore(
        os.environ["MASTER_ADDR"],
        int(os.environ["MASTER_PORT"]),
        is_master=False,
        timeout=timeout or timedelta(minutes=30),
    )
    return dist.PrefixStore(f"lightning_hpu/attempt_{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}/", store)
