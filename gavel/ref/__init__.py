"""GAVEL-REF, the metric itself: prompts, the stages (two functions each), scoring (Eq. 1, 2), grounding of
evidence, a run's inputs and its tables. How the metric is run (repeats, orders, cost, forecast) is ``gavel.runs``."""
