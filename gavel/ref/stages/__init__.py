"""GAVEL-REF stages, one module each, each two plain functions: ``build_requests`` (what to ask) and
``parse_response`` (one answer -> rows). ``answers`` is the tolerant reader they share; ``gavel.runs.pipeline``
composes the stages into scores.

- ``summarize``: a case's documents -> a summary (proportional truncation to the model's context);
- ``extract``:   one summary x 26 items -> values with verbatim evidence, grounded in the summary;
- ``compare``:   model vs reference values of one item -> relation or list matching, gated as the release was;
- ``residual``:  text not covered by the checklist -> atomic facts; facts of model vs reference -> matching;
- ``style``:     model vs reference summary -> five 1-5 similarity ratings;
- ``score``:     rows -> S_checklist, S_residual, S_style, S_GAVEL-REF per summary and per model x bin.
"""
