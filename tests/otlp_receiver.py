"""A real OTLP/HTTP trace receiver on 127.0.0.1 for the tests: POST /v1/traces bodies
(``application/x-protobuf``, gzip or not) are decoded with ``opentelemetry-proto``'s
``ExportTraceServiceRequest`` and the spans kept as plain dicts."""

from __future__ import annotations

import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


def _value(v: Any) -> Any:
    which = v.WhichOneof("value")
    if which == "array_value":
        return [_value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, which) if which else None


class Receiver:
    def __init__(self) -> None:
        try:
            from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
        except ImportError:
            pytest.skip("opentelemetry-proto is absent (the otel and test extras install it)")
        self._pb = trace_service_pb2
        self.spans: list[dict[str, Any]] = []
        self.requests: list[dict[str, str]] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                ok = self.path == "/v1/traces"
                if ok:
                    receiver._store(body, dict(self.headers.items()))
                self.send_response(200 if ok else 404)
                out = receiver._pb.ExportTraceServiceResponse().SerializeToString()
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def _store(self, body: bytes, headers: dict[str, str]) -> None:
        req = self._pb.ExportTraceServiceRequest()
        req.ParseFromString(body)
        out = []
        for rs in req.resource_spans:
            resource = {kv.key: _value(kv.value) for kv in rs.resource.attributes}
            for ss in rs.scope_spans:
                for sp in ss.spans:
                    out.append(
                        {
                            "name": sp.name,
                            "trace_id": sp.trace_id.hex(),
                            "span_id": sp.span_id.hex(),
                            "parent_span_id": sp.parent_span_id.hex(),
                            "kind": sp.kind,
                            "start": sp.start_time_unix_nano,
                            "end": sp.end_time_unix_nano,
                            "attributes": {kv.key: _value(kv.value) for kv in sp.attributes},
                            "status": sp.status.code,  # 0 unset, 1 ok, 2 error
                            "events": [e.name for e in sp.events],
                            "resource": resource,
                            "scope": ss.scope.name,
                        }
                    )
        with self._lock:
            self.spans += out
            self.requests.append(headers)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
