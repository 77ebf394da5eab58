"""``python -m gaudi_standin.device``: build (or find) the stand-in's hpu device library now.

``scripts/setup.sh`` and the test command run it, so the first script on the stand-in does not wait for the build.
Next to the Intel Gaudi bridge it builds nothing: the bridge provides the HPU device itself.
"""

from __future__ import annotations

import sys

import gaudi_standin.startup.import_hook
from gaudi_standin.device.library import DeviceLibraryError, build_directory, load_device_library


def main() -> int:
    if gaudi_standin.startup.import_hook.real_bridge_findable():
        print("lightning-hpu: the Intel Gaudi bridge is installed; the CPU stand-in's device is not built here.")
        return 0
    try:
        load_device_library(require_accelerator=False)  # torch imported before it was built: only builds
    except DeviceLibraryError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"lightning-hpu: the CPU stand-in's hpu device is ready in {build_directory()}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
