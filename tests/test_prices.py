"""checkfu_fast.prices: the shipped snapshot, model resolution, the cost of one reading."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from checkfu_fast import prices

ROOT = Path(__file__).resolve().parents[1]


def test_snapshot_is_dated_and_names_its_source() -> None:
    s = prices.snapshot()
    assert s.date is not None and len(s.date) == 10
    assert s.source["package"] == "genai-prices"
    assert len(s.source["sha256"]) == 64
    assert s.describe() == f"genai-prices {s.source['version']}, {s.date}"


def test_shipped_snapshot_is_valid_and_its_hash_recorded(monkeypatch) -> None:
    """snapshot() skips the validation for the bytes whose hash prices.SHIPPED_SHA256 records:
    those bytes must be valid, and any other bytes are validated."""
    import hashlib

    data = (ROOT / "python/checkfu_fast/data/prices.json").read_bytes()
    assert hashlib.sha256(data).hexdigest() == prices.SHIPPED_SHA256, (
        "data/prices.json changed: put its sha256 (tools/gen_prices.py prints it) in "
        "prices.SHIPPED_SHA256"
    )
    prices._validate(json.loads(data), "data/prices.json")  # raises PriceError if not
    calls = []
    real = prices._validate

    def counted(doc: object, where: str) -> None:
        calls.append(where)
        real(doc, where)

    monkeypatch.setattr(prices, "_validate", counted)
    monkeypatch.setattr(prices, "_SHIPPED", [])
    assert prices.snapshot().date is not None and calls == []
    monkeypatch.setattr(prices, "_SHIPPED", [])
    monkeypatch.setattr(prices, "SHIPPED_SHA256", "0" * 64)
    assert prices.snapshot().date is not None and calls == ["checkfu_fast/data/prices.json"]


@pytest.mark.parametrize(
    ("name", "model_id"),
    [
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-sonnet-4.5", "claude-sonnet-4-5"),
        ("anthropic/claude-sonnet-4-5", "claude-sonnet-4-5"),
        ("CLAUDE-HAIKU-4-5-20251001", "claude-haiku-4-5"),
        ("claude-opus-4-5-20251101", "claude-opus-4-5"),
        ("gpt-5-codex", "gpt-5"),
        ("gpt-5.2", "gpt-5.2"),
    ],
)
def test_aliases_and_dated_ids_resolve(name: str, model_id: str) -> None:
    mp = prices.snapshot().lookup(name)
    assert mp is not None and mp.id == model_id


def test_unknown_model_has_no_cost_never_zero() -> None:
    for name in ("<synthetic>", "unknown", "no-such-model-9", ""):
        assert prices.cost(name, input_tokens=1000, output_tokens=10) is None


def test_cost_of_one_reading_at_list_prices() -> None:
    # Claude Sonnet 4.5 list prices (USD per MTok): input 3, output 15, cache read 0.30,
    # cache write 5 min 3.75, 1 h 6
    usd = prices.cost(
        "claude-sonnet-4-5-20250929",
        input_tokens=100_000,
        output_tokens=1_000,
        cached_tokens=50_000,
        cache_write_tokens=20_000,
        cache_write_1h_tokens=5_000,
    )
    want = (30_000 * 3 + 50_000 * 0.30 + 15_000 * 3.75 + 5_000 * 6 + 1_000 * 15) / 1e6
    assert usd == pytest.approx(want, abs=1e-12)
    # gpt-5 has no cache-write price: writes cost the input price
    usd = prices.cost("gpt-5-codex", input_tokens=10_000, output_tokens=100, cached_tokens=4_000)
    assert usd == pytest.approx((6_000 * 1.25 + 4_000 * 0.125 + 100 * 10) / 1e6, abs=1e-12)


def test_long_context_tier_applies_per_request() -> None:
    # Sonnet 4.5 above 200k input tokens in one request: input 6, output 22.5, read 0.6
    usd = prices.cost(
        "claude-sonnet-4-5", input_tokens=250_000, output_tokens=2_000, cached_tokens=100_000
    )
    assert usd == pytest.approx((150_000 * 6 + 100_000 * 0.6 + 2_000 * 22.5) / 1e6, abs=1e-12)
    # exactly 200k is not above the tier
    usd = prices.cost("claude-sonnet-4-5", input_tokens=200_000)
    assert usd == pytest.approx(200_000 * 3 / 1e6, abs=1e-12)


def test_price_file_with_a_made_up_model_extends_and_overrides(tmp_path: Path) -> None:
    f = tmp_path / "p.json"
    f.write_text(
        json.dumps(
            {
                "models": [
                    {"id": "acme-coder-1", "prices": {"input": 2, "output": 8, "cacheRead": 0.5}},
                    {
                        "id": "claude-sonnet-4-5",
                        "match": {"startsWith": "claude-sonnet-4-5"},
                        "prices": [
                            {"since": None, "input": 1, "output": 1},
                            {"since": "2026-01-01", "input": 10, "output": 10},
                        ],
                    },
                ]
            }
        )
    )
    s = prices.load(f)
    assert s.cost("acme-coder-1", input_tokens=1_000_000, cached_tokens=500_000) == 1.25
    assert s.cost("acme/acme-coder-1", output_tokens=1_000_000) == 8
    assert s.cost("claude-sonnet-4-5-20250929", input_tokens=10**6, day="2025-06-01") == 1
    assert s.cost("claude-sonnet-4-5-20250929", input_tokens=10**6, day="2026-02-01") == 10
    # the rest falls through to the shipped snapshot
    assert s.lookup("gpt-5") is not None
    assert "over genai-prices" in s.describe()


@pytest.mark.parametrize(
    ("doc", "msg"),
    [
        ([], "not a JSON object"),
        ({"models": {}}, "'models' must be a list"),
        ({"models": [{"prices": {"input": 1}}]}, "needs a string 'id'"),
        ({"models": [{"id": "x", "prices": {"input": -1}}]}, "a price is a number"),
        ({"models": [{"id": "x", "prices": {"cacheRead": 1}}]}, "needs 'input' or 'output'"),
        ({"models": [{"id": "x", "match": {"near": "x"}, "prices": {"input": 1}}]}, "clause"),
        ({"format": "other/2", "models": []}, "format"),
        ({"models": [{"id": "x", "prices": {"input": 1}, "variants": {}}]}, "must be a list"),
        ({"models": [{"id": "x", "prices": {"input": 1}, "variants": [{"input": 2}]}]}, "'when'"),
        (
            {
                "models": [
                    {
                        "id": "x",
                        "prices": {"input": 1},
                        "variants": [{"when": {"speed": "fast"}, "output": -2}],
                    }
                ]
            },
            "a price is a number",
        ),
    ],
)
def test_bad_price_file_is_a_clear_error(tmp_path: Path, doc: object, msg: str) -> None:
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(prices.PriceError, match=msg):
        prices.load(f)


def test_fast_mode_is_priced_with_the_models_fast_variant() -> None:
    """Anthropic's fast mode (the event's ``speed``): ``"<model> (fast)"`` costs the model's
    ``speed: fast`` prices (genai-prices: Opus 4.8 at $10 / $50 instead of $5 / $25, the cache
    prices with it); a model without that variant is unpriced, never the standard rate."""
    s = prices.snapshot()
    std = s.lookup("claude-opus-4-8-20261015")
    fast = s.lookup("claude-opus-4-8-20261015 (fast)")
    assert std is not None and fast is not None and fast.id == "claude-opus-4-8 (fast)"
    assert (std.at()["input"], std.at()["output"]) == (5, 25)
    assert (fast.at()["input"], fast.at()["output"], fast.at()["cacheWrite"]) == (10, 50, 12.5)
    usd = s.cost("claude-opus-4-8 (fast)", input_tokens=10**6, output_tokens=10**6)
    assert usd == pytest.approx(60.0)
    assert s.lookup("claude-opus-4-6") is not None
    assert s.lookup("claude-opus-4-6 (fast)") is None
    assert s.cost("claude-opus-4-6 (fast)", input_tokens=10) is None


def test_speed_variant_overrides_only_what_it_names_from_its_date() -> None:
    mp = prices.ModelPrice(
        "m",
        None,
        [
            {"since": None, "input": 1, "output": 4},
            {"since": "2026-03-01", "input": 2, "output": 8},
        ],
        [{"when": {"speed": "fast"}, "since": "2026-02-01", "output": 40}],
    )
    fast = mp.at_speed("fast")
    assert fast is not None
    assert fast.at("2026-01-31") == {"since": None, "input": 1, "output": 4}
    assert fast.at("2026-02-15") == {"since": "2026-02-01", "input": 1, "output": 40}
    assert fast.at("2026-03-02") == {"since": "2026-03-01", "input": 2, "output": 40}
    assert mp.at_speed("turbo") is None


def test_dated_prices_pick_the_one_in_force() -> None:
    mp = prices.ModelPrice(
        "m", None, [{"since": None, "input": 1}, {"since": "2026-03-01", "input": 2}]
    )
    assert mp.at("2026-02-28")["input"] == 1
    assert mp.at("2026-03-01")["input"] == 2
    assert mp.at(None)["input"] == 2


@pytest.mark.skipif(
    importlib.util.find_spec("genai_prices") is None,
    reason="genai-prices is not installed (tools/gen_prices.py needs it; see docs/prices.md)",
)
def test_snapshot_is_what_the_generator_writes(tmp_path: Path) -> None:
    import genai_prices

    snap = json.loads((ROOT / "python/checkfu_fast/data/prices.json").read_text())
    if getattr(genai_prices, "__version__", None) != snap["source"]["version"]:
        pytest.skip("a different genai-prices version is installed")
    out = tmp_path / "prices.json"
    subprocess.run(
        [sys.executable, str(ROOT / "tools/gen_prices.py"), "--date", snap["date"], "--out", out],
        check=True,
    )
    assert out.read_text() == (ROOT / "python/checkfu_fast/data/prices.json").read_text()
