"""The precision pieces both trees build on (below them, as Lightning's Trainer plugins build on Fabric's): Fabric's
:class:`~lightning_hpu.HPUPrecision`, the FSDP and DeepSpeed precision mixins, lightning-habana's arguments."""
