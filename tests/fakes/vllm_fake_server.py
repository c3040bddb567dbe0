"""Stand-in for `vllm serve MODEL --host H --port P ...` in the SLURM test: an OpenAI-compatible fake
(chat completions, /health) that ignores the model and vLLM's other options."""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fakes.openai_fake import FakeOpenAI  # noqa: E402


class FakeVLLM(FakeOpenAI):
    """``strict_xgrammar``: as a server started with ``--structured-outputs-config.backend xgrammar``, which
    answers 400 to a schema xgrammar declines (a string with both a pattern and a length) instead of
    falling back to another backend."""

    def __init__(self, *args, strict_xgrammar: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if strict_xgrammar:
            self.vllm_rules = "vllm-xgrammar"

    def route(self, method, path, raw, headers, full_path):
        if path == "/health":
            return 200, b"", "text/plain"
        return super().route(method, path, raw, headers, full_path)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--echo-key", action="store_true", help="quote the caller's key in answers and errors")
    ap.add_argument("--fail", action="append", default=[], help="id= tag of a request that always fails")
    ap.add_argument("--fail-status", type=int, default=500,
                    help="HTTP status of those failures (the SDK retries 5xx with backoff, not 400)")
    args, _ = ap.parse_known_args()
    if args.host != "127.0.0.1":
        sys.exit("the fake vLLM server binds 127.0.0.1 only")
    srv = FakeVLLM()
    srv.httpd.server_close()
    from http.server import ThreadingHTTPServer
    srv.httpd = ThreadingHTTPServer(("127.0.0.1", args.port), srv.httpd.RequestHandlerClass)
    srv.echo_key, srv.fail_ids, srv.fail_status = args.echo_key, {tag: 10**6 for tag in args.fail}, args.fail_status
    time.sleep(1.0)  # like a real server, not healthy at once
    print(f"fake vLLM serving {args.model} on 127.0.0.1:{args.port}", flush=True)
    srv.httpd.serve_forever()
