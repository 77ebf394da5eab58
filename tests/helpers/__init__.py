"""What the tests share: models and data (``models``), a quiet Trainer (``trainer``), the stand-in's counters
(``standin``), gradients against a reference (``gradients``), paths (``paths``), processes (``processes``,
``preloaded_python``, ``two_device_run``) and the Lightning namespaces a scenario runs in (``namespaces``). Kept light:
a scenario imports it before Lightning."""
