from collections import Counter

import pytest

from gavel.core import items
from gavel.core.items import ITEMS, UnknownItemError


def test_26_items_in_9_groups_with_paper_sizes():
    assert len(ITEMS) == 26
    assert [it.number for it in ITEMS] == list(range(1, 27))
    sizes = Counter(it.group for it in ITEMS)
    assert [sizes[g.key] for g in items.GROUPS] == [4, 3, 1, 2, 5, 3, 5, 2, 1]
    assert len({it.key for it in ITEMS}) == len({it.name for it in ITEMS}) == 26
    assert all(len(it.definition) > 40 for it in ITEMS)


@pytest.mark.parametrize("spelling,key,kind", [
    ("Filing Date", "filing_date", "name"),
    ("Filing_Date", "filing_date", "underscore"),
    ("filing_date", "filing_date", "key"),
    ("01_filing_date", "filing_date", "slug"),
    ("Whether_the_Settlement_is_Court-enforced_or_Not", "court_enforced", "underscore"),
    ("Class_Action_or_Individual_Plaintiffs_", "class_action", "variant"),
    ("Name_of_the_Monitor.", "monitor_name", "variant"),
    ("All_Reported_Opinions_Cited", "reported_opinions", "variant"),
])
def test_spellings_resolve(spelling, key, kind):
    assert items.item(spelling).key == key
    assert items.spelling_of(spelling) == kind


def test_unknown_item_names_the_input():
    with pytest.raises(UnknownItemError, match="Colour of the Courtroom"):
        items.item("Colour of the Courtroom")


def test_group_slugs_match_agent_folders():
    assert [items.group_slug(g.key) for g in items.GROUPS][:3] == [
        "01_basic_case_info", "02_legal_foundation", "03_judge_info"]
    assert items.item("26_factual_basis").name == "Factual Basis of Case"
