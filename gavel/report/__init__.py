"""The shareable run report: one self-contained HTML page of a GAVEL-REF run, of the release, or of what
changed between two runs (``gavel report``; docs/report.md). ``page`` renders it; ``run``, ``release`` and
``diff`` gather what it shows, ``judge_view`` how far the judge's verdicts can be trusted."""
