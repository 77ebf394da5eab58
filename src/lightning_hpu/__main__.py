"""``python -m lightning_hpu``: the environment report (see :mod:`lightning_hpu.support.env_report`)."""

import sys

from lightning_hpu.support.env_report import main

sys.exit(main())
