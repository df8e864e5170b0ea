"""oneshot-v1 section 5: the golden vector files replay, and the runner diffs precisely."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from checkfu_fast.cli import main
from checkfu_fast.oneshot import check_vector_file
from checkfu_fast.oneshot.vectors import diff

ROOT = Path(__file__).resolve().parents[1]
AUTHOR_KIT = ROOT / "vectors" / "oneshot-v1-author-kit.json"
VECTOR_FILES = [AUTHOR_KIT, *sorted((ROOT / "vectors" / "oneshot").glob("*.json"))]


def test_author_kit_holds_both_vector_names():
    doc = json.loads(AUTHOR_KIT.read_text("utf-8"))
    assert sorted(v["name"] for v in doc["vectors"]) == [
        "argv-path-stream-json-resume-schema",
        "stdin-text",
    ]
    assert len(VECTOR_FILES) >= 7


@pytest.mark.parametrize("path", VECTOR_FILES, ids=lambda p: p.name)
def test_vector_file_replays(path):
    report = check_vector_file(path)
    assert report.error is None
    assert report.ok, "\n".join(report.lines())
    assert report.vectors


@pytest.mark.parametrize("path", VECTOR_FILES, ids=lambda p: p.name)
def test_vector_file_replays_live_against_the_stub(path):
    report = check_vector_file(path, live=True)
    assert report.ok, "\n".join(report.lines())


def mutated(tmp_path: Path, change) -> Path:
    doc = json.loads(AUTHOR_KIT.read_text("utf-8"))
    change(doc)
    out = tmp_path / "v.json"
    out.write_text(json.dumps(doc, ensure_ascii=False), "utf-8")
    return out


def stream_vector(doc):
    return next(v for v in doc["vectors"] if v["name"] == "argv-path-stream-json-resume-schema")


def test_mismatch_reports_each_pointer_with_expected_and_actual(tmp_path, capsys):
    def change(doc):
        v = stream_vector(doc)
        v["exchange"]["argv"][0] = "--changed"
        v["normalized_observations"][0]["payload"]["capability_set"]["interrupt"] = "cooperative"

    path = mutated(tmp_path, change)
    assert main(["vectors", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    index = next(
        i
        for i, v in enumerate(json.loads(path.read_text())["vectors"])
        if v["name"].startswith("argv")
    )
    fail = f"FAIL {path} #{index} argv-path-stream-json-resume-schema"
    assert fail in out
    detail = out[out.index(fail) + 1 :]
    assert any(
        line.startswith('  /exchange/argv/0: expected "--changed" actual ') for line in detail
    )
    assert (
        '  /normalized_observations/0/payload/capability_set/interrupt: expected "cooperative"'
        ' actual "kill_only"'
    ) in detail
    assert any(line.startswith("ok   ") for line in out)


def test_extra_and_missing_observations_are_reported(tmp_path):
    def change(doc):
        v = stream_vector(doc)
        v["normalized_observations"].insert(1, copy.deepcopy(v["normalized_observations"][0]))

    report = check_vector_file(mutated(tmp_path, change))
    bad = next(v for v in report.vectors if not v.ok)
    pointers = [d[0] for d in bad.diffs]
    last = (
        len(
            json.loads((tmp_path / "v.json").read_text())["vectors"][bad.index][
                "normalized_observations"
            ]
        )
        - 1
    )
    assert f"/normalized_observations/{last}" in pointers
    assert (
        next(d for d in bad.diffs if d[0] == f"/normalized_observations/{last}")[2] == "<missing>"
    )


def test_invalid_vector_file_is_rejected_with_a_pointer(tmp_path, capsys):
    path = mutated(tmp_path, lambda doc: doc["vectors"][0].update(name="other-name"))
    assert main(["vectors", str(path)]) == 2
    out = capsys.readouterr().out
    assert "not a valid oneshot-v1 vector file at /vectors/0/name" in out
    missing = tmp_path / "nope.json"  # unreadable input: 1, as for every command (README)
    assert main(["vectors", str(missing)]) == 1
    assert capsys.readouterr().err == f"checkfu-fast: {missing}: No such file or directory\n"


def test_diff_is_type_strict():
    assert diff({"a": 1}, {"a": 1.0}) == [("/a", 1, 1.0)]
    assert diff([True], [1]) == [("/0", True, 1)]
    assert diff({"a/b": {"~": 1}}, {"a/b": {}}) == [("/a~1b/~0", 1, "<missing>")]
    assert diff({"x": [1, 2]}, {"x": [1, 2]}) == []


def test_hostile_vector_file_is_an_error_not_a_crash(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    report = check_vector_file(path)
    assert report.error is not None and "too deep" in report.error
    path.write_bytes(b"\xff\xfe{")
    assert check_vector_file(path).error is not None


def test_cli_replays_a_directory(capsys):
    assert main(["vectors", str(ROOT / "vectors" / "oneshot")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == sum(len(json.loads(p.read_text())["vectors"]) for p in VECTOR_FILES[1:])
    assert all(line.startswith("ok   ") for line in out)
