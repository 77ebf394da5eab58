"""``HABANA_PROFILE``: the Synapse profiler switch, which must stay off while HPUProfiler records.

Importing the bridge sets ``HABANA_PROFILE=profile_api_light`` when it is unset (the light API trace the activity
profiler builds on). Any other value (``1``, a template name, even an empty string) hands the device to the
low-level Synapse profiler, which writes its own ``.hltv`` file and conflicts with the activity profiler.
"""

from __future__ import annotations

import os

HABANA_PROFILE_ENV = "HABANA_PROFILE"

#: The value the bridge itself sets; the only one that works with the activity profiler.
BRIDGE_DEFAULT = "profile_api_light"


def check_habana_profile() -> None:
    """Raise a ``ValueError`` naming ``HABANA_PROFILE`` when it is set to anything but the bridge's default."""
    value = os.environ.get(HABANA_PROFILE_ENV)
    if value is None or value == BRIDGE_DEFAULT:
        return
    raise ValueError(
        f"{HABANA_PROFILE_ENV}={value!r} turns on the Synapse profiler, which conflicts with HPUProfiler's activity"
        f" profiler: unset {HABANA_PROFILE_ENV} (or set it to {BRIDGE_DEFAULT!r}, the bridge's default) to use"
        f" HPUProfiler, or drop HPUProfiler to take a Synapse (.hltv) trace."
    )
