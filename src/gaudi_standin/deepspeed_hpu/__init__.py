"""DeepSpeed's HPU accelerator on the stand-in (``accelerator``), given to DeepSpeed once its module loads."""
