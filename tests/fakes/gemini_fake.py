"""Fake Gemini Developer API: batchGenerateContent with inlined requests or an uploaded JSONL file (the Files
API's resumable upload, and the answers file's download), batches.get/list, generateContent."""

from __future__ import annotations

import itertools
import json
import re
import time

from . import FakeServer
from .schema_rules import refusal


def generate_response(key: str, thoughts: bool, text: str | None = None) -> dict:
    parts = []
    if thoughts:
        parts.append({"text": f"thinking about {key}", "thought": True})
    parts.append({"text": text or f"answer:{key}"})
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 17, "candidatesTokenCount": 5, "thoughtsTokenCount": 3,
                              "totalTokenCount": 25}, "modelVersion": "gemini-2.5-pro"}


class FakeGemini(FakeServer):
    def __init__(self, expire: bool = False):
        super().__init__()
        self.batches: dict[str, dict] = {}
        self.ids = itertools.count(1)
        self.expire = expire
        self.files: dict[str, bytes] = {}  # files/<id> -> content (uploaded inputs, written answers)
        self.sessions: dict[str, dict] = {}  # open resumable uploads
        self.file_batches = 0  # batches created from a file
        self.largest_upload = 0

    def _op(self, b):
        meta = {"@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
                "model": b["model"], "displayName": b["displayName"], "state": b["state"],
                "createTime": b["createTime"], "updateTime": b["createTime"], "name": b["name"]}
        if b.get("output"):
            meta["output"] = b["output"]
            meta["endTime"] = b["createTime"]
        return {"name": b["name"], "metadata": meta, "done": b["state"] != "BATCH_STATE_PENDING"}

    def _finish(self, b):
        responses = []
        for n, req in enumerate(b["requests"]):
            key = (req.get("metadata") or {}).get("key")
            if self.expire and n >= len(b["requests"]) // 2:
                continue  # never answered: the batch expires
            cfg = (req.get("request") or {}).get("generationConfig") or {}
            refused = refusal(cfg["responseJsonSchema"], "gemini") if "responseJsonSchema" in cfg else None
            if refused:  # a schema the service does not take: that request errors
                responses.append({"error": {"code": 400, "message": refused}, "metadata": {"key": key}})
            elif self.should_fail(key, b["attempts"][key]):
                responses.append({"error": {"code": 500, "message": self.echo("internal")}, "metadata": {"key": key}})
            elif self.damage_ids.get(key) and b["attempts"][key] == 1:  # a record with no readable key
                responses.append({"response": generate_response(key, False), "metadata": {}})
            else:
                cfg = (req.get("request") or {}).get("generationConfig") or {}
                think = cfg.get("thinkingConfig") or cfg.get("thinking_config") or {}
                # proto3 JSON accepts lowerCamel and original field names alike
                thoughts = bool(think.get("includeThoughts", think.get("include_thoughts")))
                answer = self.with_usage(generate_response(key, thoughts, self.echo(f"answer:{key}")), key,
                                         "usageMetadata")
                responses.append({"response": answer, "metadata": {"key": key}})
                self.mark_succeeded(key)
        b["state"] = "BATCH_STATE_EXPIRED" if self.expire else "BATCH_STATE_SUCCEEDED"
        if b.get("file"):  # answers as a JSONL file of {"key", "response" | "error"} lines, out of order
            name = f"files/batch-out-{next(self.ids)}"
            lines = [{"key": r["metadata"].get("key"), **{k: v for k, v in r.items() if k != "metadata"}}
                     for r in reversed(responses)]
            self.files[name] = "".join(json.dumps(x) + "\n" for x in lines).encode()
            b["output"] = {"responsesFile": name}
        else:
            b["output"] = {"inlinedResponses": {"inlinedResponses": list(reversed(responses))}}

    def route(self, method, path, raw, headers, full_path):
        with self.lock:
            if method == "POST" and re.fullmatch(r"/upload/v1(?:beta)?/files", path):  # a resumable upload starts
                lower = {k.lower(): v for k, v in headers.items()}
                if lower.get("x-goog-upload-protocol") != "resumable" or lower.get("x-goog-upload-command") != "start":
                    return 400, {"error": {"code": 400, "message": "resumable start expected"}}, "application/json"
                sid = f"s{next(self.ids)}"
                self.sessions[sid] = {"file": json.loads(raw or b"{}").get("file") or {}, "data": b""}
                return 200, {}, "application/json", {"x-goog-upload-url": f"{self.url}/upload-session/{sid}",
                                                     "x-goog-upload-status": "active"}
            m = re.fullmatch(r"/upload-session/([^/]+)", path)
            if method == "POST" and m:
                lower = {k.lower(): v for k, v in headers.items()}
                session = self.sessions[m.group(1)]
                if int(lower.get("x-goog-upload-offset", -1)) != len(session["data"]):
                    return 400, {"error": {"code": 400, "message": "wrong offset"}}, "application/json"
                session["data"] += raw
                if "finalize" not in lower.get("x-goog-upload-command", ""):
                    return 200, b"", "text/plain", {"x-goog-upload-status": "active"}
                name = f"files/in-{next(self.ids)}"
                self.files[name] = session.pop("data")
                self.largest_upload = max(self.largest_upload, len(self.files[name]))
                meta = {"name": name, "displayName": session["file"].get("displayName"), "mimeType": "jsonl",
                        "sizeBytes": str(len(self.files[name])), "state": "ACTIVE", "source": "UPLOADED",
                        "uri": f"{self.url}/v1beta/{name}"}
                return 200, {"file": meta}, "application/json", {"x-goog-upload-status": "final"}
            m = re.fullmatch(r"/(?:download/)?v1(?:beta)?/(files/[^/:]+):download", path)
            if method == "GET" and m:
                return 200, self.files[m.group(1)], "application/octet-stream"
            m = re.fullmatch(r"/v1(?:beta)?/models/([^:]+):batchGenerateContent", path)
            if method == "POST" and m and "fileName" in json.loads(raw)["batch"]["inputConfig"]:
                body = json.loads(raw)["batch"]
                reqs = []
                for line in self.files[body["inputConfig"]["fileName"]].decode().splitlines():
                    rec = json.loads(line)
                    reqs.append({"request": rec["request"], "metadata": {"key": rec["key"]}})
                self.file_batches += 1
                name = f"batches/fake{next(self.ids)}"
                attempts = {r["metadata"]["key"]: self.count_submission(r["metadata"]["key"]) for r in reqs}
                self.batches[name] = {"name": name, "model": f"models/{m.group(1)}", "state": "BATCH_STATE_PENDING",
                                      "displayName": body.get("displayName"), "requests": reqs, "attempts": attempts,
                                      "createTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "polls": 0,
                                      "file": True}
                return 200, self._op(self.batches[name]), "application/json"
            if method == "POST" and m:
                body = json.loads(raw)["batch"]
                reqs = body["inputConfig"]["requests"]["requests"]
                name = f"batches/fake{next(self.ids)}"
                attempts = {r["metadata"]["key"]: self.count_submission(r["metadata"]["key"]) for r in reqs}
                self.batches[name] = {"name": name, "model": f"models/{m.group(1)}", "state": "BATCH_STATE_PENDING",
                                      "displayName": body.get("displayName"), "requests": reqs, "attempts": attempts,
                                      "createTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "polls": 0}
                return 200, self._op(self.batches[name]), "application/json"
            if method == "GET" and path in ("/v1beta/batches", "/v1/batches"):
                return 200, {"operations": [self._op(b) for b in self.batches.values()]}, "application/json"
            m = re.fullmatch(r"/v1(?:beta)?/(batches/[^/]+)", path)
            if method == "GET" and m:
                b = self.batches[m.group(1)]
                if b["state"] == "BATCH_STATE_PENDING":
                    b["polls"] += 1
                    if b["polls"] >= self.polls_to_end:
                        self._finish(b)
                return 200, self._op(b), "application/json"
            m = re.fullmatch(r"/v1(?:beta)?/models/([^:]+):generateContent", path)
            if method == "POST" and m:
                body = json.loads(raw)
                cfg = body.get("generationConfig") or {}
                if "responseJsonSchema" in cfg and refusal(cfg["responseJsonSchema"], "gemini"):
                    return 400, {"error": {"code": 400, "message": refusal(cfg["responseJsonSchema"], "gemini"),
                                           "status": "INVALID_ARGUMENT"}}, "application/json"
                text = " ".join(part.get("text", "") for part in (body.get("contents") or [{}])[-1].get("parts", []))
                cid = text.split("id=")[-1] if "id=" in text else "online"
                if self.should_fail(cid, self.count_submission(cid)):
                    return 500, {"error": {"code": 500, "message": self.echo(f"internal error for {cid}"),
                                           "status": "INTERNAL"}}, "application/json"
                self.mark_succeeded(cid)
                answer = self.with_usage(generate_response(cid, False, self.echo(f"answer:{cid}")), cid, "usageMetadata")
                return 200, self.online_answer(answer), "application/json"
        raise KeyError(path)
