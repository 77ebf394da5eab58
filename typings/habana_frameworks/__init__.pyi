# Typed stub of the Intel Gaudi PyTorch bridge: only what shared/reference/habana-bridge-api.md lists.
