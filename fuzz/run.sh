#!/usr/bin/env bash
# Coverage-guided fuzzing, one target after another (one core):
#   fuzz/run.sh [SECONDS] [DIALECT_SECONDS]     (defaults 50 and 30)
# - pipeline, parse, mapping, decompress, jsonl, split (SECONDS each): libFuzzer targets built with stable rustc (sancov
#   instrumentation, debug assertions, overflow checks) linked against Debian's libFuzzer
#   (needs libfuzzer-14-dev);
# - dialect_<name> for each of the nine dialects (DIALECT_SECONDS each): that dialect only,
#   structure-aware mutation of its real lines, seeded from vectors/events/<name>/ and
#   ../shared/corpus/real/<name>/;
# - parse_serde and jsonl_serde (DIALECT_SECONDS each): the parser and the JSONL writer against
#   serde_json as an oracle;
# - differential (SECONDS): atheris, native vs the Python reference (fuzz/requirements.txt).
# Kept crashers in fuzz/regressions/ are replayed by every target first. Prints one line per
# target and a total; exits non-zero on any crash (the inputs are copied to fuzz/found/).
# Environment: FUZZ_TARGETS="dialect_codex differential ..." runs a subset; FUZZ_CORPUS=DIR
# keeps each target's corpus in DIR/<target> (a campaign grows it) instead of a temp dir;
# PY is the Python that has checkfu_fast installed (default python3).
set -euo pipefail
cd "$(dirname "$0")"
SECONDS_PER_TARGET="${1:-50}"
DIALECT_SECONDS="${2:-30}"
PY="${PY:-python3}"
DIALECT_NAMES="claude cursor codex opencode pi grok north canary solweb"
ALL="pipeline parse mapping decompress jsonl parse_serde jsonl_serde split"
for d in $DIALECT_NAMES; do ALL="$ALL dialect_$d"; done
ALL="$ALL differential"
TARGETS="${FUZZ_TARGETS:-$ALL}"
LIBFUZZER=/usr/lib/llvm-14/lib/libFuzzer.a
[ -f "$LIBFUZZER" ] || { echo "fuzz: $LIBFUZZER missing (apt-get install libfuzzer-14-dev)"; exit 1; }
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares"
# libFuzzer is linked into the fuzz binaries only (the core's cdylib must not link it); the
# nine dialect binaries share the instrumented library, so each costs one link (~0.3 s)
# an explicit --target keeps RUSTFLAGS (the instrumentation) off build scripts (serde_json's),
# which would not link without libFuzzer
HOST=$(rustc -vV | sed -n 's/^host: //p')
BIN="target/$HOST/release"
for target in $TARGETS; do
  [ "$target" = differential ] && continue
  cargo rustc --release --quiet --target "$HOST" --target-dir target --bin "$target" -- \
    -Clink-arg="$LIBFUZZER" -Clink-arg=-lstdc++
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# seeds: one file per golden line, whole golden files, JSONTestSuite, the shipped mappings
split_lines() { # split_lines DIR PREFIX FILE... : one seed file per line
  local dir=$1 prefix=$2 i=0 line
  shift 2
  mkdir -p "$dir"
  while IFS= read -r line; do
    i=$((i + 1)); printf '%s\n' "$line" > "$dir/$prefix-$i"
  done < <(cat "$@")
}
seeds="$work/seeds"
split_lines "$seeds" golden ../vectors/events/*/*.input.jsonl
if [ -d ../../shared/third_party/JSONTestSuite/test_parsing ]; then
  cp ../../shared/third_party/JSONTestSuite/test_parsing/*.json "$seeds/"
fi
cp ../python/checkfu_fast/mappings/*.json "$seeds/"
status=0 total_s=0 total_runs=0 crashes=0
regressions=$(find regressions -maxdepth 1 -type f ! -name README.md | sort)  # not pending/
for target in $TARGETS; do
  case "$target" in
    dialect_*)
      name=${target#dialect_}
      tseeds="$work/seeds-$name"
      split_lines "$tseeds" golden ../vectors/events/"$name"/*.input.jsonl
      cp ../vectors/events/"$name"/*.input.jsonl "$tseeds/"
      if ls ../../shared/corpus/real/"$name"/*.jsonl >/dev/null 2>&1; then
        split_lines "$tseeds" real ../../shared/corpus/real/"$name"/*.jsonl
      fi
      secs=$DIALECT_SECONDS max_len=16384 timeout=5
      run=("$BIN/$target");;
    differential)
      if ! "$PY" -c "import atheris" 2>/dev/null; then
        echo "fuzz differential: atheris missing ($PY -m pip install -r fuzz/requirements.txt)"
        status=1; continue
      fi
      tseeds="$work/seeds-differential"
      "$PY" differential.py --make-seeds "$tseeds" >/dev/null 2>&1
      secs=$SECONDS_PER_TARGET max_len=16384 timeout=10
      run=("$PY" differential.py);;
    parse_serde|jsonl_serde)
      tseeds=$seeds secs=$DIALECT_SECONDS max_len=65536 timeout=5
      run=("$BIN/$target");;
    *)
      tseeds=$seeds secs=$SECONDS_PER_TARGET max_len=65536 timeout=5
      run=("$BIN/$target");;
  esac
  if [ -n "${FUZZ_CORPUS:-}" ]; then corpus="$FUZZ_CORPUS/$target"; else corpus="$work/corpus-$target"; fi
  mkdir -p "$corpus"
  # replay kept crashers first: each must now run clean
  if [ -n "$regressions" ]; then
    # shellcheck disable=SC2086
    "${run[@]}" -runs=0 $regressions >"$work/replay-$target.log" 2>&1 \
      || { echo "fuzz $target: a regression file crashes"; tail -20 "$work/replay-$target.log"; status=1; }
  fi
  log="$work/$target.log"
  if "${run[@]}" -max_total_time="$secs" -max_len="$max_len" -timeout="$timeout" -rss_limit_mb=2048 \
      -artifact_prefix="$work/crash-$target-" -print_final_stats=1 "$corpus" "$tseeds" >"$log" 2>&1; then
    result="0 crashes"
  else
    result="CRASH"; crashes=$((crashes + 1)); status=1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  units=$(find "$corpus" -type f | wc -l)
  echo "fuzz $target: ${secs}s, $runs execs ($rate/s), $cov, corpus $units, $result"
  total_s=$((total_s + secs)); total_runs=$((total_runs + ${runs:-0}))
  if [ "$result" = CRASH ]; then
    grep -v '^"' "$log" | tail -40
    mkdir -p found && cp "$work"/crash-"$target"-* found/ 2>/dev/null || true
  fi
done
echo "fuzz total: $(echo "$TARGETS" | wc -w) targets, $((total_s / 60)) CPU-min $((total_s % 60)) s, $total_runs execs, $crashes crashing targets"
exit $status
