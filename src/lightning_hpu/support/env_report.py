"""``python -m lightning_hpu`` / ``lightning-hpu-env``: an environment report to paste into a bug report.

It says what runs (versions, and whether the combination is one lightning-hpu supports; the backend, the device,
its count and mode), which ``PT_HPU_*``, ``HABANA_*``, ``HCCL_*`` and ``LIGHTNING_HPU_*`` variables are set, which
optional packages are importable, and what is wrong: an ``error`` for what would stop a run (the command then exits
with status 1), a ``warning`` for known-bad combinations. Optional packages are looked up, not imported, so the
report stays quick.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import os
import platform
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lightning_hpu.runtime import (
    HPUConfigurationError,
    HPUFeatureUnavailableError,
    bridge_emulated,
    bridge_installed,
    settings,
)
from lightning_hpu.support.suggestions import closest_name
from lightning_hpu.support.versions import TESTED, VersionRange, release

#: The report's name of each package of :data:`lightning_hpu.support.versions.TESTED`.
_REPORTED_NAMES = {"python": "Python", "torch": "torch", "lightning": "Lightning"}


def _major_minor_range(tested: VersionRange) -> tuple[tuple[int, int], tuple[int, int]]:
    """``>=2.9,<2.16`` as ``((2, 9), (2, 15))``: the first and the last tested minor release."""
    lowest, below = release(tested.lowest), release(tested.below)
    return (lowest[0], lowest[1]), (below[0], below[1] - 1)


#: The (major, minor) ranges lightning-hpu is tested with, inclusive (from
#: :data:`~lightning_hpu.support.versions.TESTED`, which ``pyproject.toml`` states too): a version outside gets a
#: warning.
SUPPORTED_VERSIONS: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {
    _REPORTED_NAMES[tested.name]: _major_minor_range(tested) for tested in TESTED
}

#: The prefixes of the environment variables the report lists.
VARIABLE_PREFIXES = ("PT_HPU_", "HABANA_", "HCCL_", "LIGHTNING_HPU_", "HLS_")

#: File systems shared between machines: a recipe cache there needs the bridge's NFS flag.
SHARED_FILE_SYSTEMS = ("nfs", "nfs4", "cifs", "smb3", "lustre", "gpfs", "beegfs", "ceph", "glusterfs", "fuse.sshfs")

#: Settings read only by ``torch.compile``: in lazy mode, where compiling is refused, they are a sign of a mix-up.
COMPILE_VARIABLE_PREFIXES = ("TORCH_COMPILE_", "TORCHDYNAMO_")

RECIPE_CACHE_ENV = "PT_HPU_RECIPE_CACHE_CONFIG"


@dataclass
class Report:
    """The report's sections (title, rows of name and value) and its findings."""

    sections: list[tuple[str, list[tuple[str, str]]]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def render(self) -> str:
        lines = ["lightning-hpu environment report"]
        for title, rows in self.sections:
            lines += ["", f"{title}:"]
            width = max((len(name) for name, _ in rows), default=0)
            lines += [f"  {name.ljust(width)}  {value}" for name, value in rows] or ["  (none)"]
        lines += ["", "Problems:"]
        lines += [f"  error: {text}" for text in self.errors] + [f"  warning: {text}" for text in self.warnings]
        if not self.errors and not self.warnings:
            lines.append("  none found")
        return "\n".join(lines)


def _distribution_version(*names: str) -> str | None:
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _major_minor(version: str) -> tuple[int, int] | None:
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _range_text(low: tuple[int, int], high: tuple[int, int]) -> str:
    return f"{low[0]}.{low[1]}" if low == high else f"{low[0]}.{low[1]} to {high[0]}.{high[1]}"


def _versions(report: Report) -> None:
    from lightning_hpu.support.versions import PACKAGE_VERSION as __version__

    found = {
        "Python": platform.python_version(),
        "torch": _distribution_version("torch") or "not installed",
        "Lightning": _distribution_version("lightning", "pytorch-lightning") or "not installed",
    }
    rows = [("lightning-hpu", __version__)]
    for name, version in found.items():
        low, high = SUPPORTED_VERSIONS[name]
        rows.append((name, f"{version} (supported: {_range_text(low, high)})"))
        current = _major_minor(version)
        if current is not None and not low <= current <= high:
            report.warnings.append(
                f"{name} {version} is outside the range lightning-hpu supports ({_range_text(low, high)})."
            )
    rows.append(("Gaudi bridge", _distribution_version("habana-torch-plugin") or _bridge_presence()))
    rows.append(("Gaudi driver", _driver_version() or "not found"))
    report.sections.append(("Versions", rows))


def _bridge_presence() -> str:
    return "installed (version unknown)" if bridge_installed() else "not installed"


def _driver_version() -> str | None:
    try:
        return Path("/sys/module/habanalabs/version").read_text().strip() or None
    except OSError:
        return None


def _backend(report: Report) -> None:
    from lightning_hpu.runtime import get_backend

    rows: list[tuple[str, str]] = []
    try:
        requested = settings.requested_backend()
        backend = get_backend()
        available = backend is not None and backend.is_available()
    except HPUConfigurationError as error:
        report.errors.append(str(error))
        report.sections.append(("Backend", [("backend", "none (see the problems below)")]))
        return
    if backend is None or not available:
        rows.append(("backend", "none"))
        if requested == "hpu":
            report.errors.append(
                f"{settings.BACKEND_ENV}=hpu asks for a Gaudi, but the Intel Gaudi bridge is not installed or sees no"
                f" device; run on a Gaudi machine, or set {settings.BACKEND_ENV}=cpu for the CPU stand-in."
            )
        else:
            report.errors.append(
                "No Gaudi and no stand-in: accelerator='hpu' would fail; run on a Gaudi machine, or set"
                f" {settings.BACKEND_ENV}=cpu for the CPU stand-in."
            )
        report.sections.append(("Backend", rows))
        return
    standin = bridge_emulated()
    rows.append(("backend", f"CPU stand-in ({settings.BACKEND_ENV}=cpu)" if standin else "Intel Gaudi bridge"))
    rows.append(("device", backend.device_name()))
    rows.append(("devices", str(backend.device_count())))
    rows.append(("mode", "lazy (legacy)" if backend.is_lazy() else "eager"))
    rows.append(("fp8 engine", "importable" if _engine_importable(backend) else "not importable"))
    if standin:
        rows += _cuda_under_standin(report)
    report.sections.append(("Backend", rows))
    _check_modules(report, backend.device_count(), standin)


def _cuda_under_standin(report: Report) -> list[tuple[str, str]]:
    """On a CUDA build of torch the stand-in turns CUDA off in its processes, so that hpu is torch's one
    accelerator; that works only where its device loaded before torch chose CUDA."""
    import torch

    if not torch.version.cuda:
        return []
    accelerator = torch.accelerator.current_accelerator()
    if accelerator is not None and accelerator.type == "cuda":
        report.errors.append(
            f"torch {torch.__version__} is a CUDA build, and CUDA became its accelerator before the stand-in's hpu"
            " device loaded, so hpu tensors cannot train; build the device (python -m gaudi_standin.device) and"
            f" set {settings.BACKEND_ENV}=cpu before Python starts."
        )
        return [("CUDA", "torch's accelerator instead of hpu (see the problems below)")]
    return [("CUDA", f"off in stand-in processes (torch {torch.__version__} is a CUDA build; hpu is its accelerator)")]


def _engine_importable(backend: object) -> bool:
    try:
        backend.transformer_engine()  # type: ignore[attr-defined]
    except (HPUFeatureUnavailableError, ImportError):
        return False
    return True


def _check_modules(report: Report, count: int, standin: bool) -> None:
    """``HABANA_VISIBLE_MODULES`` and ``HLS_MODULE_ID`` against the devices there are."""
    try:
        visible = settings.visible_modules(count)
        bound = settings.bound_module()
    except HPUConfigurationError as error:
        report.errors.append(str(error))
        return
    beyond = [module for module in visible if module >= count]
    if standin and beyond:
        report.errors.append(
            f"{settings.VISIBLE_MODULES_ENV} names module(s) {beyond}, but the stand-in emulates {count} HPU(s)"
            f" (modules 0 to {count - 1}); set {settings.CPU_DEVICES_ENV}={max(visible) + 1} or fix"
            f" {settings.VISIBLE_MODULES_ENV}."
        )
    if bound is not None and bound not in visible:
        report.errors.append(
            f"{settings.MODULE_ID_ENV}={bound} binds this process to a module outside the visible ones ({visible});"
            f" unset {settings.MODULE_ID_ENV} or widen {settings.VISIBLE_MODULES_ENV}."
        )


def _set_variables(environ: dict[str, str], prefixes: Iterable[str]) -> list[tuple[str, str]]:
    return sorted((name, value) for name, value in environ.items() if name.startswith(tuple(prefixes)))


#: The variables lightning-hpu reads; the last two only on the stand-in.
OWN_VARIABLES = (settings.BACKEND_ENV, settings.CPU_DEVICES_ENV, settings.CPU_DEVICE_NAME_ENV)
#: Other ``LIGHTNING_HPU_*`` names that are not mistakes: where the stand-in's device library is built, the launcher
#: pid the package gives the ranks it starts, and the test suite's settings (docs/guide/development.md).
OTHER_KNOWN_VARIABLES = (settings.EXTENSIONS_DIR_ENV, settings.LAUNCHER_PID_ENV)
TEST_SUITE_PREFIX = "LIGHTNING_HPU_TEST_"


def _check_own_variables(report: Report, environ: dict[str, str]) -> None:
    """Misspelt ``LIGHTNING_HPU_*`` names, and stand-in settings without the stand-in, do nothing: say so."""
    for name, _ in _set_variables(environ, ("LIGHTNING_HPU_",)):
        if name not in OWN_VARIABLES + OTHER_KNOWN_VARIABLES and not name.startswith(TEST_SUITE_PREFIX):
            guess = closest_name(name, OWN_VARIABLES)
            hint = f"did you mean {guess}?" if guess else f"lightning-hpu reads {', '.join(OWN_VARIABLES)}."
            report.warnings.append(f"{name} is not a lightning-hpu variable and has no effect; {hint}")
    if not settings.standin_requested():
        ignored = [name for name in OWN_VARIABLES[1:] if name in environ]
        if ignored:
            report.warnings.append(
                f"{', '.join(ignored)} shape(s) the CPU stand-in, which {settings.BACKEND_ENV} does not select"
                f" ({settings.BACKEND_ENV}=cpu does): it has no effect here."
            )


def _variables(report: Report, environ: dict[str, str]) -> None:
    report.sections.append(("Environment variables", _set_variables(environ, VARIABLE_PREFIXES)))
    _check_own_variables(report, environ)
    if settings.lazy_mode_from_env():
        compile_settings = [name for name, _ in _set_variables(environ, COMPILE_VARIABLE_PREFIXES)]
        if compile_settings:
            report.warnings.append(
                f"{settings.LAZY_MODE_ENV}={settings.lazy_mode_env_value()} selects the legacy lazy mode, where"
                f" torch.compile is refused, but {', '.join(compile_settings)} configure(s) torch.compile; set"
                f" {settings.LAZY_MODE_ENV}=0 to compile, or drop them."
            )
    _check_recipe_cache(report, environ.get(RECIPE_CACHE_ENV, ""))


def _mount_type(path: Path) -> str | None:
    """The file-system type of the mount that holds ``path`` (from ``/proc/mounts``), if known."""
    try:
        mounts = [line.split() for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return None
    resolved = str(path.resolve())
    best: tuple[int, str] | None = None
    for fields in mounts:
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = resolved == point or resolved.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) > best[0]):
            best = (len(point), fields[2])
    return best[1] if best else None


def _check_recipe_cache(report: Report, value: str) -> None:
    """A recipe cache on a shared file system needs the bridge's ``<RECIPE_CACHE_ON_NFS>`` flag (4th field)."""
    if not value.strip():
        return
    fields = [part.strip() for part in value.split(",")]
    path = fields[0]
    if not path:
        return
    on_nfs = len(fields) > 3 and fields[3].lower() == "true"
    fs_type = _mount_type(Path(path))
    if fs_type in SHARED_FILE_SYSTEMS and not on_nfs:
        report.warnings.append(
            f"{RECIPE_CACHE_ENV} puts the recipe cache in {path}, on a shared file system ({fs_type}), without the"
            " NFS flag: set its fourth field to true (path,delete,size_mb,true) or use a local disk."
        )


def _optional_packages(report: Report) -> None:
    rows = []
    for label, module, distributions in (
        ("DeepSpeed", "deepspeed", ("deepspeed",)),
        ("INC (neural_compressor)", "neural_compressor", ("neural-compressor-pt", "neural-compressor")),
        ("TensorBoard", "tensorboard", ("tensorboard",)),
        ("torch-tb-profiler", "torch_tb_profiler", ("torch-tb-profiler", "torch_tb_profiler")),
        ("jsonargparse (LightningCLI)", "jsonargparse", ("jsonargparse",)),
    ):
        try:
            present = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            present = False
        version = _distribution_version(*distributions) if present else None
        rows.append((label, (version or "importable") if present else "not installed"))
    report.sections.append(("Optional packages", rows))


def collect(environ: dict[str, str] | None = None) -> Report:
    """The report for this process's environment."""
    environ = dict(os.environ) if environ is None else environ
    report = Report()
    _versions(report)
    _backend(report)
    _variables(report, environ)
    _optional_packages(report)
    return report


def main(argv: Sequence[str] | None = None, prog: str = "lightning-hpu-env") -> int:
    """Print the report; the exit status is 1 when something would stop a run, else 0. ``prog``: the command's name
    in its help (``lightning-hpu env`` runs it too)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Print lightning-hpu's environment report for bug reports; exit status 1 when something would"
        " stop a run.",
    )
    parser.parse_args(argv)
    report = collect()
    print(report.render())
    return 1 if report.errors else 0


if __name__ == "__main__":
    sys.exit(main())
