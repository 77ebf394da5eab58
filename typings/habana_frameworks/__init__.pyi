# Typed stub of the Intel Gaudi PyTorch bridge: only what docs/bridge-api.md lists.
