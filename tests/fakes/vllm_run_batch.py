"""Stand-in for `vllm run-batch -i IN -o OUT --model M`: reads OpenAI batch lines and writes answers."""

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fakes.openai_fake import completion  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("-i", required=True)
ap.add_argument("-o", required=True)
ap.add_argument("--model", required=True)
ap.add_argument("--hold", help="wait until this file exists before answering")
ap.add_argument("--die", action="store_true", help="SIGKILL the whole process group (the shell too) at once")
args, _ = ap.parse_known_args()
if args.die:
    os.killpg(0, signal.SIGKILL)
while args.hold and not os.path.exists(args.hold):
    time.sleep(0.05)
time.sleep(0.3)
with open(args.i) as src, open(args.o, "w") as out:
    for line in src:
        rec = json.loads(line)
        out.write(json.dumps({"id": "x", "custom_id": rec["custom_id"], "error": None,
                              "response": {"status_code": 200, "body": completion(rec["custom_id"], args.model)}}) + "\n")
