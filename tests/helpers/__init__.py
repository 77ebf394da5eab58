"""What the tests share: models and data (``models``, ``sharded_reference``), a quiet Trainer (``trainer``), the
stand-in's counters (``standin``), gradients against a reference (``gradients``), paths (``paths``), the source's
imports read statically (``source_imports``), processes (``processes``, ``preloaded_python`` and its
``preloaded_server``, ``two_device_run``), torch's dynamo reset (``dynamo``) and the Lightning namespaces a scenario
runs in (``namespaces``). Kept light: a scenario imports it before Lightning."""
