#!/usr/bin/env bash
# Instructions per SQLite lookup, middleware against raw rusqlite (P8 in docs/dev/Benchmarks.md).
#
#   scripts/callgrind-lookup.sh [SHORT_COUNT] [LONG_COUNT]     (defaults 2000 and 12000)
#   scripts/callgrind-lookup.sh --tx [SHORT_COUNT] [LONG_COUNT]
#
# `--tx` compares a plain transaction with a retrying one instead (the retrying call must add
# nothing to the statements inside it): lookups inside one `Tx` against lookups inside one
# retrying transaction's closure, then transactions of one lookup each, as checkout + begin +
# lookup + commit against one `pool.transaction` call.
#
# Builds examples/callgrind_lookup.rs in release mode, runs it under `valgrind --tool=callgrind`
# for two lookup counts on each side, and reports (Ir(long) - Ir(short)) / (long - short): the
# instructions of one lookup, with setup, warm-up and teardown cancelled out. Instruction counts
# do not depend on what else the machine is doing, so the ratio is the stable gate for the
# middleware's own overhead. The figures also go to <CRITERION_HOME>/callgrind_lookup.json.
set -euo pipefail
cd "$(dirname "$0")/.."
tx=0
if [ "${1:-}" = "--tx" ]; then tx=1; shift; fi
short=${1:-2000}
long=${2:-12000}
command -v valgrind >/dev/null || { echo "valgrind is not installed (Debian: apt-get install valgrind)" >&2; exit 2; }

target_dir=${CARGO_TARGET_DIR:-target}
cargo build --quiet --release --features sqlite --example callgrind_lookup
bin="$target_dir/release/examples/callgrind_lookup"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
db="$work/lookup.db"
# Build the file once, outside the measured runs.
"$bin" raw 1 "$db"

# Total instructions ("Collected") of one run under callgrind.
ir() {
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$bin" "$1" "$2" "$db" 2>&1 |
    awk '/Collected :/ {print $NF}'
}

printf '%-30s %14s %14s %12s\n' side "Ir($short)" "Ir($long)" "Ir/lookup"
declare -A per
if [ "$tx" = 1 ]; then
  for side in tx_lookups retry_tx_lookups checkout_tx_per_lookup retry_tx_per_lookup; do
    a=$(ir "$side" "$short")
    b=$(ir "$side" "$long")
    per[$side]=$(( (b - a) / (long - short) ))
    printf '%-30s %14d %14d %12d\n' "$side" "$a" "$b" "${per[$side]}"
  done
  echo "per statement, retrying minus plain: $(( per[retry_tx_lookups] - per[tx_lookups] ))"
  echo "per transaction, retrying minus plain: $(( per[retry_tx_per_lookup] - per[checkout_tx_per_lookup] ))"
  exit 0
fi
# The prepared pair (P8, Q5 prepared), then the per-call forms (Q5 per-call): raw rusqlite with
# `prepare_cached` per lookup against `query(sql).params(..).one()`, and the same after a pool
# checkout per lookup.
for side in raw middleware raw_prepare_cached middleware_query_one middleware_checkout_query_one; do
  a=$(ir "$side" "$short")
  b=$(ir "$side" "$long")
  per[$side]=$(( (b - a) / (long - short) ))
  printf '%-30s %14d %14d %12d\n' "$side" "$a" "$b" "${per[$side]}"
done
ratio() { awk -v m="$2" -v r="$3" -v what="$1" 'BEGIN { printf "%s: %.3f\n", what, m / r }'; }
ratio "middleware / raw instructions per lookup" "${per[middleware]}" "${per[raw]}"
ratio "query().one / raw" "${per[middleware_query_one]}" "${per[raw]}"
ratio "query().one / raw prepare_cached" "${per[middleware_query_one]}" "${per[raw_prepare_cached]}"
ratio "checkout + query().one / raw prepare_cached" "${per[middleware_checkout_query_one]}" "${per[raw_prepare_cached]}"

# For `cargo xtask bench-report` (the P8 row): CRITERION_HOME, relative to the repository root.
home=${CRITERION_HOME:-bench_results}
case "$home" in /*) ;; *) home="$PWD/$home" ;; esac
mkdir -p "$home"
printf '{"raw_per_lookup": %d, "middleware_per_lookup": %d, "raw_prepare_cached_per_lookup": %d, "middleware_query_one_per_lookup": %d, "middleware_checkout_query_one_per_lookup": %d, "short": %d, "long": %d}\n' \
  "${per[raw]}" "${per[middleware]}" "${per[raw_prepare_cached]}" "${per[middleware_query_one]}" \
  "${per[middleware_checkout_query_one]}" "$short" "$long" > "$home/callgrind_lookup.json"
echo "wrote $home/callgrind_lookup.json"
