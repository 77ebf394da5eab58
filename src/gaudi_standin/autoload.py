"""torch's ``torch.backends`` entry point under the name installs made before the stand-in's ``startup`` folder record
(``gaudi_standin.autoload:autoload``); ``pyproject.toml`` names :func:`gaudi_standin.startup.autoload.autoload`."""

from gaudi_standin.startup.autoload import autoload

__all__ = ["autoload"]
