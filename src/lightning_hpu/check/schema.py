"""The JSON schema of ``lightning-hpu check --json`` (``schema.json`` beside this module), and validation against it.

Validation needs the ``jsonschema`` package (in the ``test`` extra); the command writes its report without it.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from typing import Any

SCHEMA_VERSION = 1


@cache
def schema() -> dict[str, Any]:
    """The schema, as shipped in the package."""
    loaded: dict[str, Any] = json.loads(files("lightning_hpu.check").joinpath("schema.json").read_text())
    return loaded


def validate(document: Any) -> None:
    """Raise ``jsonschema.ValidationError`` when ``document`` does not follow the schema."""
    import jsonschema

    jsonschema.Draft202012Validator(schema()).validate(document)
