"""Tests of the CPU stand-in, laid out like ``src/gaudi_standin``."""
