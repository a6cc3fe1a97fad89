#!/usr/bin/env bash
# Where the CPU of a saturated run goes, per transaction: the client process (with its children,
# so pgbench and sysbench count as clients when a throughput example runs them) against the
# whole machine, whose rest is the server (and whatever else runs; run it on a quiet machine).
#
#   scripts/cpu-per-transaction.sh N EXAMPLE_BINARY --only CONTENDER --transactions N [ARGS...]
#
# e.g. scripts/cpu-per-transaction.sh 200000 target/release/examples/pg_throughput \
#        --only pgbench --clients 8 --workload select --transactions 200000
#
# Prints one line: transactions, wall seconds, tps, client µs/tx (perf's task-clock), machine
# µs/tx (busy time from /proc/stat: every state but idle and iowait) and their difference.
# Needs `perf` (Debian: linux-perf).
set -euo pipefail
[ $# -ge 2 ] || { sed -n 2,12p "$0" >&2; exit 2; }
n=$1
shift

busy() { awk '/^cpu /{ print $2+$3+$4+$7+$8+$9 }' /proc/stat; }
hz=$(getconf CLK_TCK)
out=$(mktemp)
trap 'rm -f "$out"' EXIT

b0=$(busy)
t0=$(date +%s.%N)
perf stat -x, -e task-clock -o "$out" -- "$@" >/dev/null
t1=$(date +%s.%N)
b1=$(busy)

client_ms=$(awk -F, '/task-clock/ { print $1 }' "$out")
awk -v n="$n" -v t0="$t0" -v t1="$t1" -v b0="$b0" -v b1="$b1" -v hz="$hz" -v c="$client_ms" 'BEGIN {
  wall = t1 - t0
  machine_us = (b1 - b0) / hz * 1e6 / n
  client_us = c * 1e3 / n
  printf "transactions=%d wall_s=%.2f tps=%.0f client_us_per_tx=%.2f machine_us_per_tx=%.2f rest_us_per_tx=%.2f\n",
    n, wall, n / wall, client_us, machine_us, machine_us - client_us
}'
