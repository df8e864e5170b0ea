#!/usr/bin/env bash
# Build the libFuzzer targets with stable rustc (sancov instrumentation, debug assertions,
# overflow checks) linked against Debian's libFuzzer, then fuzz each for SECONDS seconds.
#   fuzz/run.sh [SECONDS]      (default 60; needs libfuzzer-14-dev)
# Seeds: fuzz/regressions/ (kept crashers, replayed first), the golden inputs' lines and
# JSONTestSuite from ../shared. Prints one summary line per target; exits non-zero on a crash.
set -euo pipefail
cd "$(dirname "$0")"
SECONDS_PER_TARGET="${1:-60}"
LIBFUZZER=/usr/lib/llvm-14/lib/libFuzzer.a
[ -f "$LIBFUZZER" ] || { echo "fuzz: $LIBFUZZER missing (apt-get install libfuzzer-14-dev)"; exit 1; }
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares"
# libFuzzer is linked into the fuzz binaries only (the core's cdylib must not link it)
for target in pipeline parse mapping; do
  cargo rustc --release --quiet --target-dir target --bin "$target" -- \
    -Clink-arg="$LIBFUZZER" -Clink-arg=-lstdc++
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
seeds="$work/seeds"
mkdir -p "$seeds"
i=0
while IFS= read -r line; do
  i=$((i + 1)); printf '%s\n' "$line" > "$seeds/golden-$i"
done < <(cat ../vectors/events/*/*.input.jsonl)
if [ -d ../../shared/third_party/JSONTestSuite/test_parsing ]; then
  cp ../../shared/third_party/JSONTestSuite/test_parsing/*.json "$seeds/"
fi
cp ../python/checkfu_fast/mappings/*.json "$seeds/"
status=0
for target in pipeline parse mapping; do
  bin="target/release/$target"
  corpus="$work/corpus-$target"
  mkdir -p "$corpus"
  # replay kept crashers first: each must now run clean
  if ls regressions/* >/dev/null 2>&1; then
    "$bin" -runs=0 regressions/* >/dev/null 2>&1 || { echo "fuzz $target: a regression file crashes"; status=1; }
  fi
  log="$work/$target.log"
  if "$bin" -max_total_time="$SECONDS_PER_TARGET" -max_len=65536 -timeout=5 -rss_limit_mb=2048 \
      -artifact_prefix="$work/crash-$target-" -print_final_stats=1 "$corpus" "$seeds" >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
    echo "fuzz $target: ${SECONDS_PER_TARGET}s, $runs execs, $cov, 0 crashes"
  else
    echo "fuzz $target: CRASH"; tail -40 "$log"
    mkdir -p found && cp "$work"/crash-"$target"-* found/ 2>/dev/null || true
    status=1
  fi
done
exit $status
