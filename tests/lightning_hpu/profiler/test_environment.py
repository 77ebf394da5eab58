"""HABANA_PROFILE is checked when HPUProfiler is built: only the bridge's light value suits the activity profiler."""

from __future__ import annotations

import pytest

from lightning_hpu import HPUProfiler


@pytest.mark.parametrize("value", ["1", "profile_api", "my_template", ""])
def test_conflicting_habana_profile_is_refused(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HABANA_PROFILE", value)
    with pytest.raises(ValueError, match=r"HABANA_PROFILE=.*unset HABANA_PROFILE"):
        HPUProfiler()
