"""Tests of ``gaudi_standin.distributed``."""
