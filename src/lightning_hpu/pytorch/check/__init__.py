"""The Trainer side of ``lightning-hpu check``: the model, the fits and the worker processes that run them.

The command itself, its table and its JSON are Lightning-free, in :mod:`lightning_hpu.check`.
"""
