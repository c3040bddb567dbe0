"""Base floor: paths and settings (``config``), checklist definitions (``items``: the file format, and every
packaged checklist in ``checklists/``, found by name), how one extracted entry is read (``entries``), tokens,
one vocabulary (``vocab``), statistics (``stats``, ``draws``; ``paired``: which differences between models are
real), spreadsheet-safe tables, JSONL, prices."""
