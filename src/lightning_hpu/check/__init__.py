"""``lightning-hpu check``: one command that proves a Gaudi node trains with Lightning (docs/guide/node-check.md).

This package holds what needs no Lightning: the rows, the table, the argument parser, the JSON schema and report, the
devices check and the worker launch. The command itself (:mod:`lightning_hpu.pytorch.check.cli`, which ``lightning-hpu
check`` runs) and its Trainer fits are in :mod:`lightning_hpu.pytorch.check`.

Imports (the layering test checks this paragraph): no Lightning package (Lightning-free, with all it imports); of
this package, ``runtime`` and ``support``.
"""
