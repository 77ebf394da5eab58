"""The README and ``docs/`` stay true: links, commands and code blocks that run."""
