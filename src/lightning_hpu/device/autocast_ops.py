"""Overriding which ops HPU autocast runs in lower precision and which in fp32.

The bridge reads two files, one aten op name per line, named by ``PT_HPU_AUTOCAST_LOWER_PRECISION_OPS_LIST`` and
``PT_HPU_AUTOCAST_FP32_OPS_LIST``; each file *replaces* the built-in list. It reads them once, when
``habana_frameworks.torch`` is first imported, so :func:`set_autocast_op_lists` refuses to change them once the
bridge is loaded instead of letting them be silently ignored. The files go to a fresh temporary directory (never
into site-packages) and stay there for the life of the process, since child processes inherit the variables.

On the CPU stand-in the lists are read once, when its ``hpu`` device loads (the first use of the stand-in in a
process), and ``torch.autocast("hpu")`` follows them; lists written later apply to the processes started after.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

LOWER_PRECISION_OPS_ENV = "PT_HPU_AUTOCAST_LOWER_PRECISION_OPS_LIST"
FP32_OPS_ENV = "PT_HPU_AUTOCAST_FP32_OPS_LIST"

_OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_BRIDGE_MODULE = "habana_frameworks.torch"


def _validate_ops(argument: str, ops: Sequence[str]) -> list[str]:
    if isinstance(ops, (str, bytes)) or not isinstance(ops, Sequence):
        raise TypeError(f"`{argument}` must be a list of aten op names such as ['linear', 'matmul'], got {ops!r}.")
    names = list(ops)
    bad = [op for op in names if not isinstance(op, str) or not _OP_NAME.fullmatch(op)]
    if bad:
        raise ValueError(f"`{argument}` holds {bad!r}, which are not aten op names; use names like 'linear'.")
    duplicates = sorted({op for op in names if names.count(op) > 1})
    if duplicates:
        raise ValueError(f"`{argument}` names {duplicates} more than once; list each op once.")
    return names


def read_op_list(env: str) -> list[str] | None:
    """The ops in the file that ``env`` names (``None`` when the variable is unset or the file unreadable)."""
    path = os.environ.get(env)
    if not path:
        return None
    try:
        return [line.strip() for line in Path(path).read_text().splitlines() if line.strip()]
    except OSError:
        return None


def set_autocast_op_lists(
    lower_precision_ops: Sequence[str] | None = None, fp32_ops: Sequence[str] | None = None
) -> dict[str, str]:
    """Write the given op lists to files and point the bridge's variables at them.

    Args:
        lower_precision_ops: ops autocast runs in bf16/fp16 (replaces the bridge's list); ``None`` keeps it.
        fp32_ops: ops autocast runs in fp32 (replaces the bridge's list); ``None`` keeps it.

    Returns:
        The variables set, each mapped to its file.

    Raises:
        RuntimeError: the bridge is already imported and the lists differ from the ones it read.
    """
    requested: dict[str, list[str]] = {}
    if lower_precision_ops is not None:
        requested[LOWER_PRECISION_OPS_ENV] = _validate_ops("autocast_lower_precision_ops", lower_precision_ops)
    if fp32_ops is not None:
        requested[FP32_OPS_ENV] = _validate_ops("autocast_fp32_ops", fp32_ops)
    both = sorted(set(requested.get(LOWER_PRECISION_OPS_ENV, [])) & set(requested.get(FP32_OPS_ENV, [])))
    if both:
        raise ValueError(
            f"{both} appear in both `autocast_lower_precision_ops` and `autocast_fp32_ops`; keep each op in one list."
        )
    if not requested:
        return {}
    if _BRIDGE_MODULE in sys.modules:
        if all(read_op_list(env) == ops for env, ops in requested.items()):
            # The bridge was started with exactly these lists (e.g. a child process that inherited them).
            return {env: os.environ[env] for env in requested}
        raise RuntimeError(
            "The autocast op lists cannot change now: the Habana bridge (habana_frameworks.torch) is already"
            " imported and read its lists at import. Set them before anything imports the bridge (in eager mode torch"
            f" loads it on `import torch`): write one op per line to files and export {LOWER_PRECISION_OPS_ENV} /"
            f" {FP32_OPS_ENV} before starting Python."
        )
    directory = Path(tempfile.mkdtemp(prefix="lightning_hpu_autocast_"))
    written: dict[str, str] = {}
    for env, ops in requested.items():
        path = directory / ("lower_precision_ops.txt" if env == LOWER_PRECISION_OPS_ENV else "fp32_ops.txt")
        path.write_text("".join(f"{op}\n" for op in ops))
        os.environ[env] = written[env] = str(path)
    return written
