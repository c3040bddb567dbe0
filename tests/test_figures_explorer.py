"""Figures from the committed result tables, and the explorer's highlighting and cell views."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from gavel.paper import explorer, figures, results  # noqa: E402


@pytest.fixture(scope="module")
def tables():
    return results.read()


@pytest.mark.parametrize("name", ["fig_benchmark", "fig_groups", "fig_item_scores", "fig_summary_length",
                                  "fig_document_extraction", "fig_release_audit"])
def test_every_figure_has_labelled_axes(tables, name):
    fig = getattr(figures, name)(tables)
    for ax in fig.axes:
        if ax.get_label() == "<colorbar>":
            continue
        assert ax.get_xlabel() and ax.get_ylabel() or ax.get_title(), (name, ax)
    labels = " ".join(t.get_text() for ax in fig.axes for t in ax.get_yticklabels() + ax.get_xticklabels())
    assert "gemini-2.5-pro" not in labels  # display names, not release folder names


def test_item_analysis_and_save(tables, tmp_path, monkeypatch):
    monkeypatch.setenv("GAVEL_FIGURES_DIR", str(tmp_path))
    fig = figures.fig_item_analysis(tables, "gemini-2.5-flash")
    paths = figures.save(fig, "x")
    assert [p.suffix for p in paths] == [".png", ".pdf"] and all(p.stat().st_size > 1000 for p in paths)


def test_highlight_marks_evidence_and_reports_missing():
    text = "On May 5, 2025, tenants sued.\nJudge  Jane Doe presided."
    out = explorer.highlight(text, ["May 5, 2025", "Judge Jane Doe", "not in the text"])
    assert "<mark>May 5, 2025</mark>" in out
    assert "<mark>Judge  Jane Doe</mark>" in out  # found across a run of white space
    assert "evidence not found verbatim" in out and "not in the text" in out
    assert explorer.highlight("a <b> c", [], spans=[(2, 5)]) == "a <mark>&lt;b&gt;</mark> c"


def test_explorer_views_on_fixture(fixture_rel):
    cells = explorer.find(fixture_rel, "gpt-5-2025-08-07", item="Filing Date")
    assert set(cells["case_id"]) == {"c1", "c2"}
    assert explorer.find(fixture_rel, "gpt-5-2025-08-07", relation="reference_contains_model")["case_id"].tolist() == ["c2"]
    page = explorer.show(fixture_rel, "gpt-5-2025-08-07", "c1", "filing_date")
    assert "May 5, 2025" in page and "judge: <b>equal</b>" in page
    doc = explorer.show(fixture_rel, "gpt-oss-20b-BF16", "h1", "filing_date", task="document", method="agent",
                        configuration="individual")
    assert "<mark>On February 28, 2023" in doc  # human.json span highlighted in the human summary
