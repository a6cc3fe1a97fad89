#!/usr/bin/env bash
# The throughput suite (docs/dev/Benchmarks.md, "Throughput at saturation"), in one command:
# builds SQLx's contender (bench-harnesses/sqlx_lookup's sqlx_throughput, its own lockfile), the
# async-SQLite peers' (bench-harnesses/sqlite_peers's peers_throughput, its own lockfile) and the
# three examples in release, then runs pg_throughput and mysql_throughput with SQLx beside
# pgbench/sysbench, the raw drivers and the crate, and sqlite_throughput with deadpool-sqlite and
# tokio-rusqlite beside raw rusqlite and the crate. Each writes its figures
# to <CRITERION_HOME>/throughput/<engine>.json, which `cargo xtask bench-report` turns into the
# report's "Throughput at saturation" table.
#
#   scripts/throughput.sh [postgres|mysql|sqlite ...] [-- EXAMPLE_ARGS...]
#
# With no engine named, all three run. EXAMPLE_ARGS go to every example (e.g.
# `-- --clients 8,64 --seconds 5 --rounds 3`; their defaults are those).
set -euo pipefail
cd "$(dirname "$0")/.."

engines=()
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; break ;;
    postgres|mysql|sqlite) engines+=("$1"); shift ;;
    *) echo "usage: $0 [postgres|mysql|sqlite ...] [-- EXAMPLE_ARGS...]" >&2; exit 2 ;;
  esac
done
[ ${#engines[@]} -gt 0 ] || engines=(postgres mysql sqlite)

sqlx_bin=""
for e in "${engines[@]}"; do
  if [ "$e" != sqlite ]; then
    cargo build --quiet --release --manifest-path bench-harnesses/sqlx_lookup/Cargo.toml --bin sqlx_throughput
    sqlx_bin="${CARGO_TARGET_DIR:-bench-harnesses/sqlx_lookup/target}/release/sqlx_throughput"
    break
  fi
done

peers_bin=""
for e in "${engines[@]}"; do
  if [ "$e" = sqlite ]; then
    cargo build --quiet --release --manifest-path bench-harnesses/sqlite_peers/Cargo.toml --bin peers_throughput
    peers_bin="${CARGO_TARGET_DIR:-bench-harnesses/sqlite_peers/target}/release/peers_throughput"
    break
  fi
done

for e in "${engines[@]}"; do
  case "$e" in
    postgres) cargo run --quiet --release --features postgres --example pg_throughput -- --sqlx "$sqlx_bin" "$@" ;;
    mysql) cargo run --quiet --release --features mysql --example mysql_throughput -- --sqlx "$sqlx_bin" "$@" ;;
    sqlite) cargo run --quiet --release --features sqlite --example sqlite_throughput -- --peers "$peers_bin" "$@" ;;
  esac
done
