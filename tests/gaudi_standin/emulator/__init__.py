"""Tests of ``gaudi_standin.emulator``."""
