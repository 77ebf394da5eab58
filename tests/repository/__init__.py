"""The source tree as a whole (layers, imports) and the test suite's own machinery."""
