"""``lightning-hpu check``: one command that proves a Gaudi node trains with Lightning (docs/guide/node-check.md).

This package is its Lightning-free part (the rows, the table, the JSON schema and report, the devices check, the
worker launch); the command and its Trainer fits are in :mod:`lightning_hpu.pytorch.check`.
"""
