"""gavel: GAVEL-REF and the GAVEL study, reproducible. The package is built in floors (docs/layout.md):
core, llm, answers, release, ref, runs, metrics, documents, paper, report, annotation, and the command line."""
