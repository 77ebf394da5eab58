#!/usr/bin/env bash
# The package is ready to publish: `python -m build` makes the sdist and the wheel, `twine check` and
# `check-wheel-contents` pass, and the wheel installs into a fresh environment that already has torch (the Gaudi
# image's case) without touching that torch, imports, shows its metadata, and, without LIGHTNING_HPU_BACKEND=cpu
# (as on a Gaudi) or next to a real bridge, neither builds nor loads anything of the CPU stand-in.
#   bash scripts/package_check.sh          # CI runs it from .ci/run; about a minute
# Needs the `release` extra (scripts/setup.sh installs it with `test`). Outputs go to build/package_check/.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-$PWD/.venv/bin/python}"
work="$PWD/build/package_check"
step() { echo "package_check.sh: $*"; }
fail() { echo "package_check.sh: FAILED: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
step "building the sdist and the wheel (python -m build)..."
"$python" -m build --outdir "$work/dist" . > "$work/build.log" 2>&1 || { cat "$work/build.log" >&2; fail "python -m build"; }
wheel="$(ls "$work"/dist/*.whl)"
sdist="$(ls "$work"/dist/*.tar.gz)"
"$python" -m twine check --strict "$wheel" "$sdist" || fail "twine check"
"$python" -m check_wheel_contents "$wheel" || fail "check-wheel-contents"

# The fresh environment sees a torch installed before it, as a venv made with --system-site-packages on a Gaudi image
# sees the image's: the base interpreter's packages, and if torch is not among them (here) the packages of $python's
# environment other than lightning-hpu itself, linked into a directory that a .pth file puts after the venv's own
# site-packages (pip installs into the venv only, never there).
base="$("$python" -c "import sys; print(getattr(sys, '_base_executable', sys.executable))")"
venv="$work/venv"
"$base" -m venv --system-site-packages "$venv"
if ! "$base" -c "import torch" 2>/dev/null; then
    purelib="$("$python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")"
    mkdir -p "$work/preinstalled"
    for entry in "$purelib"/*; do
        case "$(basename "$entry")" in
            lightning_hpu* | gaudi_standin* | __editable__* | *.pth) ;;
            *) ln -s "$entry" "$work/preinstalled/" ;;
        esac
    done
    "$venv/bin/python" -c "import sysconfig, sys; open(sysconfig.get_paths()['purelib'] + '/preinstalled.pth', 'w').write(sys.argv[1] + '\\n')" "$work/preinstalled"
fi
vpy="$venv/bin/python"
torch_before="$(env -u LIGHTNING_HPU_BACKEND "$vpy" -c "import torch; print(torch.__version__, torch.__file__)")"
step "installing the wheel beside torch ${torch_before%% *}..."
env -u PIP_REQUIRE_VIRTUALENV "$vpy" -m pip install -q --disable-pip-version-check "$wheel" > "$work/install.log" 2>&1 \
    || { cat "$work/install.log" >&2; fail "pip install of the wheel"; }
torch_after="$(env -u LIGHTNING_HPU_BACKEND "$vpy" -c "import torch; print(torch.__version__, torch.__file__)")"
[ "$torch_before" = "$torch_after" ] || fail "installing the wheel changed torch: $torch_before -> $torch_after"

step "checking the installed package (metadata, import, the stand-in inert on a Gaudi)..."
env -u LIGHTNING_HPU_BACKEND -u LIGHTNING_HPU_EXTENSIONS_DIR -u PYTHONPATH "$vpy" - "$venv" <<'EOF'
"""What a Gaudi user gets from the wheel (no LIGHTNING_HPU_BACKEND: the stand-in is not chosen)."""
import sys
from importlib import metadata
from pathlib import Path

venv = Path(sys.argv[1]).resolve()
meta = metadata.metadata("lightning-hpu")
assert meta["Summary"].startswith("PyTorch Lightning plugin for Intel Gaudi"), meta["Summary"]
assert meta["Description-Content-Type"] == "text/markdown", meta["Description-Content-Type"]
assert meta["Description"].lstrip().startswith("# lightning-hpu"), "the README is the long description"
urls = meta.get_all("Project-URL") or []
assert any(url.startswith("Documentation,") for url in urls) and any(url.startswith("Issues,") for url in urls), urls
classifiers = meta.get_all("Classifier") or []
assert "Programming Language :: Python :: 3.12" in classifiers and "Typing :: Typed" in classifiers, classifiers
assert meta["License-Expression"] == "Apache-2.0", meta["License-Expression"]

import torch  # noqa: E402  (torch's backend autoload runs the stand-in's entry point: it must do nothing here)

import lightning_hpu  # noqa: E402

assert Path(lightning_hpu.__file__).resolve().is_relative_to(venv), f"imported from {lightning_hpu.__file__}"
assert lightning_hpu.__version__ == metadata.version("lightning-hpu")
loaded = sorted(name for name in sys.modules if name.split(".")[0] in {"gaudi_standin", "habana_frameworks"})
# The .pth line and torch's entry point import these stdlib-only modules and return at once.
at_start = ("", ".startup", ".startup.import_hook", ".startup.autoload", ".startup.device_cache")
assert set(loaded) <= {f"gaudi_standin{name}" for name in at_start}, loaded
assert "lightning_hpu_standin_device" not in Path("/proc/self/maps").read_text(), "the device library was loaded"
assert not (venv / "var" / "lightning_hpu").exists(), "the stand-in's device library was built"
assert not lightning_hpu.HPUAccelerator.is_available(), "no Gaudi here: no HPU, and no stand-in either"
print(f"  {meta['Name']} {meta['Version']}: {meta['Summary']}")
print(f"  imported from {Path(lightning_hpu.__file__).parent}; stand-in modules loaded: {loaded}")
EOF

# Installed means working: the wheel's torch.backends entry point registers the HPU with Lightning when Lightning is
# imported (no import of lightning_hpu), and LIGHTNING_HPU_AUTOLOAD=0 turns that off.
"$vpy" - <<'EOF'
import sys

import lightning  # noqa: F401
from lightning.pytorch.accelerators import AcceleratorRegistry

assert "hpu" in AcceleratorRegistry, "installed, lightning-hpu registers accelerator='hpu' when Lightning is imported"
assert "lightning_hpu" in sys.modules
print("  import lightning registers accelerator='hpu' (no import of lightning_hpu)")
EOF
LIGHTNING_HPU_AUTOLOAD=0 "$vpy" - <<'EOF'
import sys

import lightning  # noqa: F401
from lightning.pytorch.accelerators import AcceleratorRegistry

assert "hpu" not in AcceleratorRegistry and "lightning_hpu" not in sys.modules, "the switch leaves Lightning alone"
print("  LIGHTNING_HPU_AUTOLOAD=0 leaves Lightning as it is")
EOF

# Next to a real bridge (a stand-in one here: a habana_frameworks package on the path), even LIGHTNING_HPU_BACKEND=cpu
# leaves the real bridge alone: no import hook, no device library.
mkdir -p "$work/fake_bridge/habana_frameworks/torch"
touch "$work/fake_bridge/habana_frameworks/__init__.py" "$work/fake_bridge/habana_frameworks/torch/__init__.py"
env -u LIGHTNING_HPU_EXTENSIONS_DIR LIGHTNING_HPU_BACKEND=cpu PYTHONPATH="$work/fake_bridge" "$vpy" - <<'EOF'
import sys
from pathlib import Path

import torch  # noqa: F401

import gaudi_standin.startup

assert not gaudi_standin.startup.installed(), "the stand-in's import hook went in next to a real bridge"
assert "lightning_hpu_standin_device" not in Path("/proc/self/maps").read_text(), "the device library was loaded"
assert "gaudi_standin.bridge" not in sys.modules
print("  next to a real bridge, with LIGHTNING_HPU_BACKEND=cpu: the stand-in stays out")
EOF

"$vpy" -c "import zipfile, sys; names = zipfile.ZipFile(sys.argv[1]).namelist(); \
assert 'lightning_hpu_emulation.pth' in names and 'lightning_hpu_autoload.py' in names and 'lightning_hpu_module_ids.py' in names and 'gaudi_standin/device/csrc/hpu_device.cpp' in names, names" "$wheel"
[ -x "$venv/bin/lightning-hpu-env" ] || fail "the lightning-hpu-env command was not installed"
step "passed: $(basename "$sdist"), $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KB)"
