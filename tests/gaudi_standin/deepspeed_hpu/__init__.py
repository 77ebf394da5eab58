"""Tests of ``gaudi_standin.deepspeed_hpu``."""
