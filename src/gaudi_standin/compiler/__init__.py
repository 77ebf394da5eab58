"""The graph compiler behind ``torch.compile(backend="hpu_backend")`` on the stand-in (``hpu_backend``)."""
