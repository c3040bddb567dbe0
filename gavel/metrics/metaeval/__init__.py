"""Meta-evaluation of GAVEL-REF (paper section 2.3, Table 1, Appendix D): how well the LLM stages agree with
people, and how well people agree with each other.

Every statistic is a :class:`gavel.core.stats.Stat`: a value, a ``status`` and the number of units, with the percent agreement
beside every kappa/alpha and a bootstrap 95% interval over cases where one is asked for. Degenerate input
never turns into a silent 0, 1 or NaN: the value is None and the status says why
(``gavel.core.stats.STATUSES``).

Statistics come from the well-kept libraries: Cohen's kappa from scikit-learn (unweighted and quadratic
weighted: the paper does not say which it used), Fleiss' kappa from statsmodels, Krippendorff's alpha from
``krippendorff``; accuracy and the confusion matrix from scikit-learn. S_checklist uses gavel.ref.scoring.

Inputs are plain tables:

* value rows (an LLM's extraction, ``human.json``, an annotator's review): ``case_id, item, index, value,
  evidence`` (list of strings), optionally ``evidence_spans`` (character offsets) and ``annotator``;
* the annotation app's export (JSONL rows: task, kind, case_id, annotator, role, field, value, revision,
  current, saved_at), read with :func:`read_export`;
* comparison answers: ``task, label`` (single) or ``task, pairs`` (multi);
* style ratings: ``task, aspect, rating``.

The comparison of two checklists inside S_checklist needs a judge. :func:`exact_compare` is the stand-in
used when no LLM judge output is given: values equal after normalising case, spaces and punctuation count
as equal, everything else as different. Results computed with it say so (``judge='exact-match'``).

The package reads top to bottom: ``checklists`` (two extractions against each other), ``export`` (the app's
export as tables), ``judges`` (the LLM judge and the style rater against people, agreement between
annotators, Table 1), ``inputs`` (the release's and the app's inputs, the annotation sample), ``runs`` (end
to end, notebook 13), ``agreement`` (per task type and item, human–human beside human–LLM: the
annotation app's agreement page). The statistics themselves are ``gavel.core.stats``. The names below are the surface
that notebook 13 and the annotation app use.
"""

from gavel.core.stats import (  # noqa: F401
    Stat,
)
from gavel.metrics.metaeval.agreement import (  # noqa: F401
    AGREEMENT_COLUMNS,
    agreement_table,
    llm_style_ratings,
    prefill_rows,
)
from gavel.metrics.metaeval.checklists import (  # noqa: F401
    as_list,
    coverage_agreement,
    evidence_spans,
    exact_compare,
    extraction_metaeval,
    item_lists,
    normalise,
    s_checklist_case,
)
from gavel.metrics.metaeval.export import (  # noqa: F401
    comparison_answers,
    current,
    extraction_rows,
    read_export,
    style_ratings,
)
from gavel.metrics.metaeval.inputs import (  # noqa: F401
    as_reference,
    exact_answers,
    human_extraction,
    judge_answers,
    read_tasks,
    read_value_rows,
    release_value_pairs,
    sample_pairs,
)
from gavel.metrics.metaeval.judges import (  # noqa: F401
    TABLE1_COLUMNS,
    aggregate_comparisons,
    comparison_metaeval,
    inter_annotator,
    pairwise_f1,
    pairwise_s_checklist,
    single_alpha,
    single_fleiss,
    stats_frame,
    style_metaeval,
    table1,
)
from gavel.metrics.metaeval.runs import (  # noqa: F401
    METAEVAL_DIR,
    comparison_tasks_from_release,
    evaluate,
    extract_human_summaries,
    plot,
    run,
    write_table1_row,
)
