"""A scripted fake model for the Gavel-Agent tests: the answer of each request is the scripted action of the
step its snapshot names, so the same state always gets the same answer (as a cached real model would).
Also the subprocess of the SIGKILL test: ``python agent_script.py OUT_DIR PAID_LOG KILL_AT_STEP MODE``."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from pathlib import Path

from gavel.documents.configs import group_config
from gavel.documents.corpus import Corpus
from gavel.llm.providers.mock import MockProvider

MODEL = "gpt-4.1-2025-04-14"
STEP = re.compile(r"Step (\d+) of at most")

TEXTS = {
    "Complaint": ("UNITED STATES DISTRICT COURT\nCase No. 1:21-cv-01234\nCOMPLAINT FOR DECLARATORY AND INJUNCTIVE "
                  "RELIEF\nFiled March 3, 2021.\nPlaintiffs Jane Roe and John Doe, on behalf of themselves and all "
                  "others similarly situated, bring this class action against the City of Springfield.\n"
                  "Counsel: American Civil Liberties Union Foundation.\n" + "The facts are as follows. " * 200),
    "Order Granting Preliminary Injunction": ("ORDER\nThe motion for a preliminary injunction is GRANTED.\n"
                                              "SO ORDERED. Judge Ann Lee, United States District Judge.\n"),
    "Docket": "DOCKET\n1 | 2021-03-03 | COMPLAINT filed.\n2 | 2021-05-01 | ORDER granting preliminary injunction.\n",
}


def corpus() -> Corpus:
    names = list(TEXTS)
    return Corpus.build("fake-1", [TEXTS[n] for n in names], names, ["Complaint", "Order/Opinion", "Docket"],
                        ["2021-03-03", "2021-05-01", None])


def config():
    return group_config("basic_case_info")


def value(v, text, doc="Complaint", loc="page 1"):
    return {"value": v, "evidence": [{"text": text, "source_document": doc, "location": loc}]}


SCRIPT = {
    1: {"tool": "list_documents", "args": {}},
    2: {"tool": "read_document", "args": {"doc_name": "Complaint", "start_token": 0, "end_token": 120}},
    3: {"tool": "append_checklist", "args": {"patch": [
        {"key": "Filing_Date", "extracted": [value("2021-03-03", "Filed March 3, 2021.")]},
        {"key": "Who_are_the_Parties", "extracted": [value("Plaintiff: Jane Roe", "Plaintiffs Jane Roe and John Doe"),
                                                     value("Defendant: City of Springfield",
                                                           "against the City of Springfield")]}]}},
    4: {"tool": "search_document_regex", "args": {"pattern": "class action", "doc_name": "all", "flags": ["IGNORECASE"],
                                                  "top_k": 3, "context_tokens": 100}},
    5: {"tool": "update_checklist", "args": {"patch": [
        {"key": "Class_Action_or_Individual_Plaintiffs", "extracted": [value("Class action", "bring this class action")]},
        {"key": "Type_of_Counsel", "extracted": [value("Public-interest nonprofit (ACLU)",
                                                       "American Civil Liberties Union Foundation")]}]}},
    6: {"decision": "stop", "reason": "all four keys filled"},
    8: {"decision": "stop", "reason": "reviewed"},
}


def scripted_model(script=None, paid_log: str | None = None):
    script = SCRIPT if script is None else script

    def answer(request):
        step = int(STEP.search(request.messages[-1]["content"]).group(1))
        if paid_log:
            with open(paid_log, "a") as fh:
                fh.write(f"{step} {request.custom_id}\n")
        action = script.get(step, {"tool": "get_checklist", "args": {"item": "Filing_Date"}})
        return action if isinstance(action, str) else json.dumps(action)

    return MockProvider(answer=answer)


if __name__ == "__main__":
    from gavel.documents import agent

    out_dir, paid_log, kill_at, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    marker = Path(out_dir + ".killed")
    original = agent.RunFiles.append_events

    def append_events(self, state, events):
        if state.step == kill_at and not marker.exists():
            marker.write_text("x")
            if mode == "after":  # the step's ledger lines are written, state.json is not
                original(self, state, events)
            os.kill(os.getpid(), signal.SIGKILL)
        original(self, state, events)

    agent.RunFiles.append_events = append_events
    result = agent.run_agent(corpus(), config(), scripted_model(paid_log=paid_log), MODEL, out_dir)
    print(json.dumps({"end": result.end_reason, "steps": result.steps, "resumed": result.resumed}))
