"""What a newcomer saw wrong in the figures, checked on the drawn figures themselves (the committed result
tables, no release): labels that run out of their frame, a legend over the data, counts drawn over bars, two
models in one colour, a share too thin to see and not said in words, a rule cited and not explained."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

from gavel.paper import figures, results  # noqa: E402


@pytest.fixture(scope="module")
def tables():
    return results.read(None)


def _drawn(fig):
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _anchored_inside(ax, text) -> bool:
    x, y = text.xy if hasattr(text, "xy") else text.get_position()
    (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
    return text.get_transform() != ax.transAxes and x0 <= x <= x1 and y0 <= y <= y1


@pytest.mark.parametrize("name", ["fig_benchmark", "fig_groups", "fig_release_audit", "fig_summary_length",
                                  "fig_evidence_grounding"])
def test_labels_anchored_in_a_frame_stay_inside_it(tables, name):
    fig = getattr(figures, name)(tables)
    renderer = _drawn(fig)
    out = []
    for ax in fig.axes:
        frame = ax.get_window_extent(renderer)
        for text in ax.texts:
            if text.get_text() and _anchored_inside(ax, text):
                box = text.get_window_extent(renderer)
                if box.x1 > frame.x1 + 0.5 or box.x0 < frame.x0 - 0.5:
                    out.append(text.get_text())
    plt.close(fig)
    assert out == [], f"{name}: labels running into the frame: {out}"


def test_the_group_figure_keeps_legend_and_counts_off_the_data(tables):
    fig = figures.fig_groups(tables)
    renderer = _drawn(fig)
    (ax,) = fig.axes
    legend = ax.get_legend().get_window_extent(renderer)
    data = [p.get_window_extent(renderer) for p in ax.patches if p.get_height() > 0]
    data += [Bbox(ax.transData.transform(seg)) for c in ax.collections for seg in c.get_segments()]  # bounds
    assert not any(legend.overlaps(d) for d in data), "the legend covers bars or error bars"
    counts = [t for t in ax.texts if t.get_text().isdigit()]
    assert counts and not any(t.get_window_extent(renderer).overlaps(p) for t in counts for p in data[:len(ax.patches)]
                              if p.height > 1), "counts drawn over the bars"
    assert all(matplotlib.colors.to_rgb(t.get_color()) != (1.0, 1.0, 1.0) for t in counts)
    assert min(t.get_fontsize() for t in counts) >= 6
    plt.close(fig)


def test_every_model_has_a_colour_of_its_own_in_the_length_figure(tables):
    fig = figures.fig_summary_length(tables)
    (ax,) = fig.axes
    models = [line for line in ax.get_lines() if line.get_label() != "Human reference"]
    colours = [matplotlib.colors.to_hex(line.get_color()) for line in models]
    assert len(models) == 12 and len(set(colours)) == 12, colours
    plt.close(fig)


def test_thin_not_found_shares_are_said_in_words(tables):
    fig = figures.fig_evidence_grounding(tables)
    g = tables["summary_evidence_grounding"]
    per_model = g[g["item"] == "all"]
    labelled = [t.get_text() for t in fig.axes[0].texts]
    expected = sorted(f"{100 * s:.1f}%" for s in per_model["share_not_found"] if s > 0)
    assert expected and sorted(labelled) == expected
    plt.close(fig)


def test_a_rule_the_figures_cite_is_explained_where_it_is_cited():
    assert "rule 6" in figures.ESTIMATED_NOTE and "own released half" in figures.ESTIMATED_NOTE
