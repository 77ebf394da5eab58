"""Tests of ``lightning_hpu``, laid out like ``src/lightning_hpu`` (the tests of ``src/lightning_hpu/x/y.py`` are in
``tests/lightning_hpu/x/test_y*.py``)."""
