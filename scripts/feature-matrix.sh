#!/usr/bin/env bash
# The library alone, with each engine on its own (and with its TLS feature), builds without a
# warning: code shared by several engines is compiled by what it needs, never by accident of
# which engines a build has. Run from the repository root.
set -euo pipefail
for features in sqlite postgres turso mysql postgres-tls mysql-tls "sqlite,turso" "postgres,mysql" "sqlite,migrate" "mysql,migrate"; do
  echo "== --features $features"
  cargo clippy --lib --no-default-features --features "$features" -- -D warnings
done
