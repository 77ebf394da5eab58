"""``lightning-hpu check``: one command that proves a Gaudi node trains with Lightning (see ``docs/guide/node-check.md``).

This package is the Lightning-free part (the command, its table, JSON schema, the devices check and the worker
launch); the Trainer fits run in worker processes from :mod:`lightning_hpu.pytorch.check`.
"""
