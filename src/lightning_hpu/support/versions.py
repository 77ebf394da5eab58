"""The torch, Lightning and Python versions lightning-hpu is tested with, and every difference between them it handles.

Intel Gaudi software ships its own torch build (Intel Gaudi 1.23: torch 2.9; 1.24.0: 2.10; 1.24.1: 2.11), so the
package runs on the torch of the user's image, not on one it picks. :data:`TESTED` is the matrix CI runs
(docs/guide/supported-versions.md; ``pyproject.toml`` states the same ranges): outside it, ``import lightning_hpu``
warns once (:func:`warn_if_untested`) and goes on. A version difference that needs a branch becomes a function here,
named for the fact it tests and saying the versions it is for, so code never compares ``torch.__version__`` itself.

The differences met so far, and where each is handled (none needs a branch yet), with the test that shows it on
the leg where it shows (``scripts/test.sh --leg oldest|newest|gaudi-1.24|gaudi-1.24.1``;
docs/guide/supported-versions.md):

* PyPI's Linux builds of torch 2.9.1, 2.10.0, 2.11.0 and 2.15.0 are CUDA builds (2.13.0 also has the ``+cpu`` build the
  pinned leg installs), in which CUDA is torch's one accelerator: the stand-in's device library replaces CUDA's
  hooks before ``torch._C`` initialises (``gaudi_standin/startup/early_load.py``, ``hpu_cuda_hooks.cpp``), so hpu is the
  accelerator there as on a CPU build, and CUDA is off in stand-in processes. Tested by
  ``tests/gaudi_standin/startup/test_cuda_build.py``
  on the oldest, newest and Gaudi legs (and by every test that trains on hpu there).
* Device meshes built with the same sizes compare equal and hash alike (torch 2.13 and 2.15 both), so a table keyed
  by meshes hands a new mesh the entry of an equal older one, and loses it when that one is collected: on torch 2.15
  this happened in the two-rank FSDP2 context-parallel run. The gradient mesh of a context-parallel mesh is kept on
  the mesh object itself (``distributed/context_parallel.py``; no branch needed;
  ``test_a_mesh_keeps_its_gradient_mesh_when_an_equal_older_mesh_is_collected`` in
  ``tests/lightning_hpu/distributed/test_context_parallel.py``,
  and the two-rank FSDP2 run there, on the newest leg).
* torch 2.15's triton (3.9) counts its nanobind objects when the interpreter is torn down and prints those still
  alive as leaks: objects kept from the collector with ``gc.freeze()`` at exit show up there. Nothing in the
  package freezes; the tests' preloaded interpreter gives its objects back before exit
  (``tests/helpers/preloaded_python.py``, ``test_exit_status_signals_tracebacks_and_the_fallback`` on the newest leg).
* torch 2.9 routes a coalesced tensor reduce-scatter (FSDP's ``_coalescing_manager``) through
  ``ProcessGroup.reduce_scatter_tensor_coalesced``, torch 2.13 through ``reduce_scatter_single_coalesced``: the
  stand-in's ``"hccl"`` group overrides both names, so HCCL's reduce-op check runs on every torch
  (``gaudi_standin/distributed/process_group.py``; no branch needed;
  ``test_coalesced_reduce_scatter_through_torch_is_checked`` in
  ``tests/gaudi_standin/distributed/test_process_group.py``, on the oldest
  leg).
* torch 2.9's ``mse_loss`` backward refuses inputs of two dtypes ("Found dtype BFloat16 but expected Float"), which
  torch 2.13 accepts; under ``precision="bf16-true"`` the batch arrives in bf16, so a loss on a float32 output needs
  both sides cast (``examples/precision.py`` does, run by ``tests/examples/test_precision_example.py`` on the oldest
  leg).
  User code, nothing for the package to change.
* Lightning 2.6.0 prints its "💡 Tip" about litmodels while a Trainer is created and has no LitLogger tip; the
  newest 2.6.x prints both, at ``fit``: ``integration/quiet_tips.py`` leaves them out of HPU Trainers on both
  (``test_lightnings_tips_are_left_out_of_hpu_trainers_only`` in ``tests/lightning_hpu/support/test_user_errors.py``,
  on the oldest leg).
* Lightning's development head (after 2.6.5; the ``lightning-head`` leg) gives ``SIGTERMException`` exit status 143
  itself and its ``__init__`` no argument; 2.6 leaves the status 0 unless given one: ``integration/sigterm.py:
  sigterm_exception`` gives both 143 (no branch on versions: it asks the exception;
  ``test_the_loop_stops_with_a_non_zero_status_once_the_ranks_agree`` in
  ``tests/lightning_hpu/pytorch/strategies/test_sigterm_agreement.py``, on that leg).

Versions are compared by their release numbers only: Habana's torch builds carry local tags
(``2.9.0+hpu.synapse.v1.23.0``) or pre-release tags (``2.9.0a0+git…``), and count as the release they are built
from.
"""

from __future__ import annotations

import re
import sys
import warnings
from dataclasses import dataclass
from importlib.metadata import version

import torch

__all__ = [
    "TESTED",
    "UntestedVersionWarning",
    "VersionRange",
    "release",
    "untested_versions",
    "warn_if_untested",
]


def release(version: str) -> tuple[int, ...]:
    """The release numbers of a version string: ``"2.9.0a0+git1234"`` -> ``(2, 9, 0)``, ``"3.11"`` -> ``(3, 11)``."""
    match = re.match(r"\s*v?(\d+(?:\.\d+)*)", version)
    if match is None:
        raise ValueError(f"version={version!r} is not a version number; pass one such as '2.9.1'.")
    return tuple(int(part) for part in match.group(1).split("."))


@dataclass(frozen=True)
class VersionRange:
    """``lowest <= version < below``, compared by release numbers (missing trailing numbers count as 0)."""

    name: str
    lowest: str
    below: str

    def contains(self, version: str) -> bool:
        """Whether ``version``'s release numbers lie in the range (pre-release and local tags are ignored)."""
        number = _padded(release(version))
        return _padded(release(self.lowest)) <= number < _padded(release(self.below))

    @property
    def specifier(self) -> str:
        """The range as ``pyproject.toml`` writes it, e.g. ``>=2.9,<2.15``."""
        return f">={self.lowest},<{self.below}"

    def __str__(self) -> str:
        return f"{self.name} {self.specifier}"


def _padded(numbers: tuple[int, ...]) -> tuple[int, ...]:
    return numbers + (0,) * (3 - len(numbers))


#: This release of lightning-hpu (``pyproject.toml`` says the same; ``lightning_hpu.__version__``).
PACKAGE_VERSION = "0.1.0"

#: The tested matrix: torch from Intel Gaudi 1.23's 2.9 to 2.15 (the newest Lightning 2.6 runs with that CI
#: installs), Lightning 2.6.x, Python 3.10 to 3.12. Intel Gaudi 1.22's torch 2.7 is not tested, so not in it.
TESTED = (
    VersionRange("torch", "2.9.0a0", "2.16"),
    VersionRange("lightning", "2.6.0", "2.7"),
    VersionRange("python", "3.10", "3.13"),
)


class UntestedVersionWarning(UserWarning):
    """torch, Lightning or Python is outside the versions lightning-hpu is tested with."""


def lightning_version() -> str:
    """Lightning's version: the imported package's, once the program imported it (what runs), else its distribution's
    (importing ``lightning`` to ask would import the Trainer, which this module, below every layer, does not)."""
    imported = sys.modules.get("lightning")
    return str(imported.__version__) if imported is not None else version("lightning")


def installed_versions() -> dict[str, str]:
    """The versions of this environment, by the names :data:`TESTED` uses."""
    return {
        "torch": str(torch.__version__),
        "lightning": lightning_version(),
        "python": ".".join(str(part) for part in sys.version_info[:3]),
    }


def untested_versions(versions: dict[str, str] | None = None) -> list[str]:
    """The ``"name version"`` of each of ``versions`` (default: this environment's) outside :data:`TESTED`."""
    found = installed_versions() if versions is None else versions
    return [f"{r.name} {found[r.name]}" for r in TESTED if r.name in found and not r.contains(found[r.name])]


_warned = False


def warn_if_untested(versions: dict[str, str] | None = None) -> None:
    """Warn once per process if torch, Lightning or Python is outside :data:`TESTED` (``import lightning_hpu`` calls
    this); the package still runs."""
    global _warned
    outside = untested_versions(versions)
    if not outside or _warned:
        return
    _warned = True
    tested = ", ".join(str(r) for r in TESTED)
    warnings.warn(
        f"lightning-hpu is tested with {tested}; this environment has {', '.join(outside)}, outside that range,"
        " so it may work but is untested (see docs/guide/supported-versions.md).",
        UntestedVersionWarning,
        stacklevel=2,
    )
