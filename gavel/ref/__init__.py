"""GAVEL-REF: scoring, the judge's relations, grounding, prompts, the pipeline and its stages."""
