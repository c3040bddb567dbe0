"""Checklists extracted straight from a case's documents (paper §4): the four methods and what they share.

* ``corpus``      case documents from the ``full_case_data`` JSON shape or a folder, in the paper's order
                  (chronological, undated after dated, docket sheets last), each with a unique stable name;
                  corpora built from real release text for tests and benchmarks.
* ``chunking``    lossless 16K-token (o200k) chunks cut at whitespace.
* ``configs``     extraction configurations of a checklist (``gavel.core.items``: the 26 legal items by
                  default, or any checklist file): all items, one run per group, one run per item.
* ``store``       the agent's store (append / update patches, the "Not Applicable" encoding), its files in
                  the release's field names, value rows, and the replay of released agent ledgers.
* ``tools``       the six Gavel-Agent tools over a corpus and a store, with the paper's limits.
* ``search_worker`` the regex search's worker process (address-space and CPU limits, killed past its time).
* ``agent``       the Gavel-Agent loop: snapshot prompt, two-stage stop, step limit, refused repeats,
                  ledger / stats / checklist files, resume after a kill.
* ``end_to_end``  one request per item over all documents (proportional truncation), evidence grounding.
* ``chunked``     chunk-by-chunk extraction with an explicit state merge.
* ``three_pass``  per-chunk high-recall extraction, a pairwise merge tree, a strict prune; evidence checked
                  mechanically (byte-equal to a candidate's, found at its named place) after every pass.
* ``pacing``      each method's expected duration on the local model, said before it starts.

Data flows one way: ``corpus`` and ``chunking`` know nothing of checklists; ``checklist`` knows nothing of
tools; every LLM call goes through ``gavel.llm.runner.StageRunner``'s online path.
"""
