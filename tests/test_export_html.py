"""The transcript page (``to_html``, ``export --format html``), rendered by a real browser:
headless Chromium (Debian's ``chromium``; .ci/run installs it) loads the page with the network
blocked, takes a screenshot, and the test reads the text a person sees: ``innerText`` of the
rendered page (folded ``<details>`` contents are not in it) through a wrapper page that frames
the exported one."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

import pytest

from checkfu_fast.export import to_html
from conftest import ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is absent (apt-get install chromium)"
)

B = {"v": "events/v1", "dialect": "claude", "sessionId": "sess-1"}
LONG = "\n".join(f"line {i}: ok" for i in range(1, 41))
EVENTS = [
    {**B, "seq": 0, "kind": "message", "subtype": "text", "role": "user",
     "text": "Run the tests & fix <anything> broken", "timestamp": "2026-08-20T10:00:00Z"},
    {**B, "seq": 1, "kind": "message", "subtype": "thinking", "role": "assistant",
     "text": "SECRET-THOUGHT: start with pytest", "modelCallId": "m1"},
    {**B, "seq": 2, "kind": "message", "subtype": "text", "role": "assistant",
     "text": "Running the suite.", "modelCallId": "m1"},
    {**B, "seq": 3, "kind": "tool_call", "subtype": "tool_use", "modelCallId": "m1",
     "tool": {"name": "Bash", "id": "t1", "arguments": {"command": "pytest -q"}}},
    {**B, "seq": 4, "kind": "usage", "subtype": "message", "usageScope": "message",
     "messageId": "m1", "usage": {"inputTokens": 1200, "outputTokens": 34, "cachedTokens": 1000,
                                  "model": "opus", "costUsd": 0.0125}},
    {**B, "seq": 5, "kind": "message", "subtype": "tool_result", "role": "tool", "text": LONG,
     "tool": {"name": "unknown", "id": "t1"}},
    {**B, "seq": 6, "kind": "tool_call", "subtype": "tool_use", "modelCallId": "m2",
     "tool": {"name": "Task", "id": "t2", "arguments": {"description": "Check docs",
                                                        "subagent_type": "Explore"}},
     "subagent": {"id": "t2", "phase": "spawned", "name": "Explore",
                  "description": "Check docs"}},
    {**B, "seq": 7, "kind": "message", "subtype": "text", "role": "user",
     "text": "Look at README.md", "parentToolUseId": "t2"},
    {**B, "seq": 8, "kind": "message", "subtype": "text", "role": "assistant",
     "text": "README mentions pytest.", "parentToolUseId": "t2", "modelCallId": "s1"},
    {**B, "seq": 9, "kind": "message", "subtype": "tool_result", "role": "tool",
     "text": "README mentions pytest.", "tool": {"name": "unknown", "id": "t2"}},
    {**B, "seq": 10, "kind": "error", "subtype": "api_error", "errorKind": "quota",
     "error": {"code": "rate_limit", "message": "429 You have hit your limit"}},
]  # fmt: skip


def test_page_is_self_contained_and_escaped() -> None:
    page = to_html(EVENTS)
    assert page.startswith("<!DOCTYPE html>")
    assert "default-src 'none'" in page  # the page may load nothing
    assert not re.search(r"\b(src|href)\s*=", page)
    assert "<script" not in page
    assert "Run the tests &amp; fix &lt;anything&gt; broken" in page
    assert "<anything>" not in page
    # thinking and the 40-line output are folded; the sub-agent is nested in the Task call
    assert re.search(r'<details class="think"><summary>thinking \(33 characters\)', page)
    assert "<summary>output: 40 lines" in page
    task = page.index('<span class="name">Task</span>')
    assert page.index('<details class="sub" open>', task) > task
    assert 'class="step error"' in page


def _browser(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    cmd = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--proxy-server=127.0.0.1:9", "--hide-scrollbars", *args,
    ]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


@needs_chromium
def test_chromium_renders_the_page(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text(to_html(EVENTS), encoding="utf-8")
    shot = tmp_path / "page.png"
    res = _browser(["--window-size=1100,1400", f"--screenshot={shot}", page.as_uri()])
    assert shot.is_file(), res.stderr[-2000:]
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") == 1100  # the width of the rendered viewport
    assert len(png) > 20_000  # not a blank page

    # what a person sees: innerText of the rendered page (the wrapper frames it)
    wrapper = tmp_path / "wrapper.html"
    wrapper.write_text(
        '<!DOCTYPE html><html><body><iframe id="f" src="page.html" width="1100" height="800">'
        "</iframe><pre id=\"out\"></pre><script>document.getElementById('f').onload = () => {"
        "document.getElementById('out').textContent = JSON.stringify("
        "document.getElementById('f').contentDocument.body.innerText);};</script></body></html>",
        encoding="utf-8",
    )
    for _ in range(3):  # a loaded machine can dump the DOM before the frame loaded: again
        res = _browser(
            [
                "--allow-file-access-from-files",
                "--virtual-time-budget=10000",
                "--dump-dom",
                wrapper.as_uri(),
            ]
        )
        m = re.search(r'<pre id="out">(.*?)</pre>', res.stdout, re.S)
        if m and m.group(1):
            break
    assert m and m.group(1), res.stdout[-2000:] + res.stderr[-2000:]
    seen = json.loads(unescape(m.group(1)))
    # the header's totals
    assert "claude session sess-1" in seen
    assert re.search(r"input tokens\s+1,200", seen) and re.search(r"cost\s+\$0\.0125", seen)
    assert re.search(r"errors\s+1", seen)
    # messages, the tool call with its arguments, the per-step tokens and cost
    assert "Run the tests & fix <anything> broken" in seen
    assert "Running the suite." in seen and '"command": "pytest -q"' in seen
    assert "in 1,200 · cached 1,000 · out 34 tokens · $0.0125" in seen
    # folded: the thinking text and the long output are not shown, their summaries are
    assert "thinking (33 characters)" in seen and "SECRET-THOUGHT" not in seen
    assert "output: 40 lines" in seen and "line 40: ok" not in seen
    # the sub-agent, nested and open; the error, labelled
    assert "sub-agent Explore: Check docs" in seen and "Look at README.md" in seen
    assert "ERROR · QUOTA · API_ERROR" in seen.upper()
    assert "429 You have hit your limit" in seen


def test_docs_screenshot_exists() -> None:
    shot = ROOT / "docs" / "export-transcript.png"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
