"""Exports of events/v1 events to where people read agent runs (docs/export.md).

- :func:`to_atif`: Harbor's Agent Trajectory Interchange Format (``ATIF-v1.8``), one
  trajectory per session with sub-agents embedded;
- :func:`to_otel`: OpenTelemetry spans by the GenAI semantic conventions (needs the ``otel``
  extra);
- :func:`to_html`: a self-contained transcript page.

All of them read event fields only (never ``parsed`` or ``raw``), so they work for every dialect
and mapping file and over lean events.
"""

from __future__ import annotations

from ._atif import ATIF_VERSION, AtifBuilder, to_atif
from ._html import render_trajectory, to_html
from ._otel import OtelEmitter, otlp_provider, to_otel
from ._sessions import split_sessions

__all__ = [
    "ATIF_VERSION",
    "AtifBuilder",
    "OtelEmitter",
    "otlp_provider",
    "render_trajectory",
    "split_sessions",
    "to_atif",
    "to_html",
    "to_otel",
]
