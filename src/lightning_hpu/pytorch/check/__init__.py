"""``lightning-hpu check`` itself: the command (:mod:`.cli`), the model, the fits and the worker processes that run
them.

What needs no Lightning (the rows, the table, the argument parser, the JSON schema and report, the devices check, the
worker launch) is below, in :mod:`lightning_hpu.check`.
"""
