"""GAVEL-REF inside inspect_ai (an optional extra, ``inspect``): the ``gavel_ref`` scorer and the benchmark
task (``scorer``, ``task``), a run written as inspect ``.eval`` logs and an inspect log read as summaries
(``logs``), and their commands (``cli``). The only package that imports ``inspect_ai``; nothing below it
imports this package."""
