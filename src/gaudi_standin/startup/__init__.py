"""What runs when Python or torch starts: the stand-in's import hook and the early loading of its device library.

- ``import_hook``: :func:`install_if_requested`, which the distribution's ``.pth`` file calls at every Python start,
  serves ``habana_frameworks`` (and ``torch.hpu``) from :mod:`gaudi_standin.bridge` when ``LIGHTNING_HPU_BACKEND=cpu``
  chose the stand-in;
- ``autoload``: torch's ``torch.backends`` entry point, which loads the built device library while torch imports;
- ``early_load``: on a CUDA build of torch, the same library loaded before ``torch._C``, so that CUDA is off;
- ``device_cache``: where the built device library is kept, and whether one is built for a given torch.

Everything here imports only the standard library: it runs at every Python start.
"""

from gaudi_standin.startup.import_hook import install_if_requested, installed

__all__ = ["install_if_requested", "installed"]
