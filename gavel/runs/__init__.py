"""Running the metric: a run is passes x repeats x orders over GAVEL-REF's stages (``gavel.ref``), with its
ledger (what it cost), its forecast (how long it takes), the reports on repeats, orders and option orders
(functions of the judgments table), the comparisons of every pair of models, the stand-in answers of the mock
provider, the notebooks' run object and ``make demo``."""
