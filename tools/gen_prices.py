"""Write the price snapshot ``python/checkfu_fast/data/prices.json`` from the genai-prices package.

Prices are never typed by hand: this script reads the package data of ``genai-prices`` (Pydantic's
maintained, MIT-licensed price table, docs/prices.md says why it was chosen over LiteLLM's) and
writes the token prices of every model in the snapshot's documented format (docs/prices.md):

    python3 -m venv /tmp/gp && /tmp/gp/bin/pip install genai-prices==0.2.5
    /tmp/gp/bin/python tools/gen_prices.py [--date YYYY-MM-DD]

Kept from the source, per provider: its id, how a model name finds it (``model_match``,
``provider_match``) and its fallback providers; per model: its id, its match rule (aliases and
dated ids), and every standard price in force from a start date (``StartDateConstraint``), each
with input, output, cache read, cache write (5-minute) and 1-hour cache write prices in USD per
million tokens, tiered ones (long context: the whole request at the tier's price when its input
tokens exceed the tier's start) as ``{"base", "tiers"}``; and the request variants a CLI's log
can select, ``speed`` (Anthropic's fast mode: ``price_variants`` with ``when={"speed": ...}``)
and the ``service_tier`` ones a Codex rollout names (``fast``, ``flex``, ``ultrafast``), each as
the prices it overrides, from its start date. Left out: the other request variants (batch, the
other service tiers, routes: no CLI log says them), time-of-day prices
(``TimeOfDateConstraint``: the price without it applies), and non-token prices (audio, images,
web searches, requests).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from datetime import date, datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "python" / "checkfu_fast" / "data" / "prices.json"
FORMAT = "checkfu-fast-prices/1"
# genai-prices price key -> snapshot key
KEYS = {
    "input_mtok": "input",
    "output_mtok": "output",
    "cache_read_mtok": "cacheRead",
    "cache_write_mtok": "cacheWrite",
    "cache_write_1h_mtok": "cacheWrite1h",
}


def num(d: Decimal) -> float | int:
    """A Decimal as the shortest JSON number with the same value."""
    f = float(d)
    if Decimal(repr(f)) != d:
        raise SystemExit(f"price {d} is not exact as a float")
    return int(f) if f == int(f) and abs(f) < 1e15 else f


def clause(c: Any) -> dict[str, Any]:
    name = type(c).__name__
    if name == "ClauseOr":
        return {"or": [clause(x) for x in c.or_]}
    if name == "ClauseAnd":
        return {"and": [clause(x) for x in c.and_]}
    simple = {
        "ClauseEquals": ("equals", "equals"),
        "ClauseStartsWith": ("startsWith", "starts_with"),
        "ClauseEndsWith": ("endsWith", "ends_with"),
        "ClauseContains": ("contains", "contains"),
        "ClauseRegex": ("regex", "regex"),
    }
    if name not in simple:
        raise SystemExit(f"unknown match clause {name}")
    key, attr = simple[name]
    return {key: getattr(c, attr)}


def price_value(v: Any) -> Any:
    if isinstance(v, Decimal):
        return num(v)
    if type(v).__name__ == "TieredPrices":
        return {
            "base": num(v.base),
            "tiers": [{"above": t.start, "price": num(t.price)} for t in v.tiers],
        }
    raise SystemExit(f"unknown price value {v!r}")


def model_price(mp: Any) -> dict[str, Any] | None:
    out = {}
    for src, dst in KEYS.items():
        v = getattr(mp, src, None)
        if v is not None:
            out[dst] = price_value(v)
    # a model whose tokens have no price (images, audio, requests only) is not kept
    return out if "input" in out or "output" in out else None


def prices(model: Any) -> list[dict[str, Any]]:
    if not isinstance(model.prices, list):
        p = model_price(model.prices)
        return [] if p is None else [{"since": None, **p}]
    out = []
    for cp in model.prices:
        c = cp.constraint
        if c is not None and type(c).__name__ == "TimeOfDateConstraint":
            continue  # off-peak prices: the price in force without them applies
        since = None
        if c is not None:
            sd = c.start_date
            since = (sd.date() if isinstance(sd, datetime) else sd).isoformat()
        p = model_price(cp.prices)
        if p is not None:
            out.append({"since": since, **p})
    # genai-prices takes the last active price: keep that order, dates ascending
    return out


#: the request contexts of ``price_variants`` a CLI's log names (docs/prices.md), and the values
#: kept: Anthropic's ``speed`` (fast mode), and OpenAI's ``service_tier`` where it is a speed a
#: Codex rollout names (its fast mode is the ``fast`` tier, priced as ``priority``; ``flex``,
#: ``ultrafast``)
VARIANT_KEYS = {"speed": None, "service_tier": ("fast", "flex", "ultrafast")}


def variants(model: Any) -> list[dict[str, Any]]:
    """The model's ``speed`` and ``service_tier`` variants (:data:`VARIANT_KEYS`), in the
    source's order (the first that applies wins each price): ``{"when": {...}, "since": date |
    None, <the prices it overrides>}``."""
    out = []
    for v in model.price_variants or ():
        if set(v.when) - set(VARIANT_KEYS) or any(
            VARIANT_KEYS[k] is not None and x not in VARIANT_KEYS[k] for k, x in v.when.items()
        ):
            continue
        c = v.constraint
        if c is not None and type(c).__name__ == "TimeOfDateConstraint":
            continue
        since = None
        if c is not None:
            sd = c.start_date
            since = (sd.date() if isinstance(sd, datetime) else sd).isoformat()
        p = {dst: price_value(getattr(v.prices, src)) for src, dst in KEYS.items()
             if getattr(v.prices, src, None) is not None}
        if p:
            out.append({"when": dict(v.when), "since": since, **p})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--date", help="the snapshot's date (default: today, UTC)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    import genai_prices
    from genai_prices import data

    src = Path(data.__file__).read_bytes()
    version = getattr(genai_prices, "__version__", None)
    if version is None:
        from importlib.metadata import version as v

        version = v("genai-prices")
    providers = []
    models = []
    for p in data.providers:
        providers.append(
            {
                "id": p.id,
                "modelMatch": clause(p.model_match) if p.model_match is not None else None,
                "providerMatch": clause(p.provider_match) if p.provider_match is not None else None,
                "fallback": list(p.fallback_model_providers or []),
            }
        )
        for m in p.models:
            ps = prices(m)
            if ps:
                entry = {"id": m.id, "provider": p.id, "match": clause(m.match), "prices": ps}
                vs = variants(m)
                if vs:
                    entry["variants"] = vs
                models.append(entry)
    snap = {
        "format": FORMAT,
        "date": args.date or datetime.now(timezone.utc).date().isoformat(),
        "source": {
            "package": "genai-prices",
            "version": version,
            "file": "genai_prices/data.py",
            "sha256": hashlib.sha256(src).hexdigest(),
        },
        "unit": "USD per million tokens",
        "providers": providers,
        "models": models,
    }
    date.fromisoformat(snap["date"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(snap, indent=None, separators=(",", ":"), sort_keys=False)
    # one model per line: diffs of a regenerated snapshot stay readable
    text = text.replace(',{"id":', ',\n{"id":')
    args.out.write_text(text + "\n")
    print(f"{args.out}: {len(models)} models of {len(providers)} providers", file=sys.stderr)
    digest = hashlib.sha256((text + "\n").encode()).hexdigest()
    print(f"its sha256 (prices.SHIPPED_SHA256 when shipped): {digest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
