"""``habana_frameworks`` on the stand-in: the bridge's module tree, served module for module.

Each module under this package serves the bridge module of the same path below ``habana_frameworks`` (the import
hook, :mod:`gaudi_standin.startup.import_hook`, maps one onto the other): ``torch.hpu.random`` here is
``habana_frameworks.torch.hpu.random`` there.
"""
