"""The repository's ``examples/`` run as a user runs them."""
