import pytest

from gavel.ref import prompts


def test_render_messages_splits_roles_and_fills_fields(tmp_path):
    (tmp_path / "demo.txt").write_text("[system]\nYou read $kind text. Costs $$5.\n[user]\n{\"a\": 1}\n${item}?\n")
    msgs = prompts.render_messages("demo", tmp_path, kind="legal", item="Filing Date")
    assert msgs == [{"role": "system", "content": "You read legal text. Costs $5."},
                    {"role": "user", "content": '{"a": 1}\nFiling Date?'}]
    assert prompts.placeholders("demo", tmp_path) == {"kind", "item"}
    assert len(prompts.template_hash("demo", tmp_path)) == 16


def test_missing_field_and_missing_template_are_named(tmp_path):
    (tmp_path / "demo.txt").write_text("Hello $who")
    with pytest.raises(prompts.PromptError, match=r"'demo'.*\$who"):
        prompts.render("demo", tmp_path)
    with pytest.raises(prompts.PromptError, match="nope"):
        prompts.render("nope", tmp_path)
