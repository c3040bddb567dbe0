"""gavel.core.entries.entry_values: every value shape the release and our extractors produce, read one way."""

from gavel.core.entries import entry_values


def test_plain_values_with_evidence_objects_and_strings():
    rows, problems = entry_values({"extracted": [
        {"value": "Jane Doe", "evidence": [{"text": "Jane Doe sued", "source_document": "Complaint"}]},
        {"value": "John Roe", "evidence": ["John Roe, a prisoner"]},
    ]})
    assert problems == []
    assert [(r["index"], r["value"]) for r in rows] == [(1, "Jane Doe"), (2, "John Roe")]
    assert rows[0]["evidence"] == ["Jane Doe sued"] and rows[0]["evidence_documents"] == ["Complaint"]
    assert rows[1]["evidence"] == ["John Roe, a prisoner"] and rows[1]["evidence_documents"] is None


def test_list_values_expand_and_structured_values_join_with_problems():
    rows, problems = entry_values([{"value": ["a", "b"], "evidences": "x"},
                                   {"value": {"party": "ACLU", "role": "counsel"}, "evidences_indices": [[0, 4]]}])
    assert [r["value"] for r in rows] == ["a", "b", "party: ACLU; role: counsel"]
    assert [r["index"] for r in rows] == [1, 2, 3]
    assert rows[0]["evidence"] == ["x"] and rows[2]["evidence_spans"] == [[0, 4]]
    assert [p.defect for p in problems] == ["list_value", "structured_value"]


def test_malformed_values_are_reported_not_guessed():
    rows, problems = entry_values({"extracted": [{"value": None}, 42, {"value": "ok"}]})
    assert [r["value"] for r in rows] == ["ok"] and rows[0]["index"] == 1
    assert [p.defect for p in problems] == ["malformed_record", "malformed_record"]
    assert entry_values({"extracted": "x"})[1][0].detail == "extracted is not a list"
    assert entry_values(7)[1][0].detail == "entry is int"
    assert entry_values({"extracted": []}) == ([], [])
