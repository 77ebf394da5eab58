"""Writing checkpoint files atomically, with host copies of the tensors, for both trees (``HPUCheckpointIO`` is a
Fabric ``CheckpointIO``, as Lightning's Trainer uses them).

Imports (the layering test checks this paragraph): of Lightning, ``lightning.fabric``; nothing of this package.
"""
