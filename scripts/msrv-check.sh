#!/usr/bin/env bash
# Builds the library with the Rust named by `rust-version` in Cargo.toml, with the committed
# Cargo.lock: every feature but `turso` and `mysql` (the `turso` crate's dependencies and
# `mysql_common` need a newer Rust; see the README's "Install"), and SQLite alone.
#
# The toolchain is rustup's `<version>` when it is installed; otherwise a toolchain linked into
# rustup as `msrv-<version>`; otherwise, on Debian, the `rustc-web`/`cargo-web` packages of that
# version (Debian 12 ships Rust 1.85 that way), installed and linked. With none of these it
# fails and says how to provide one.
set -euo pipefail
cd "$(dirname "$0")/.."

msrv=$(sed -n 's/^rust-version *= *"\(.*\)"/\1/p' Cargo.toml | head -n 1)
linked="msrv-$msrv"
toolchains=$(rustup toolchain list 2>/dev/null | awk '{print $1}')
toolchain=$(grep -E "^${msrv//./\\.}(\\.0)?-" <<<"$toolchains" | head -n 1 || true)
if [ -z "$toolchain" ] && grep -qx "$linked" <<<"$toolchains"; then
  toolchain=$linked
fi
if [ -z "$toolchain" ] && command -v apt-cache >/dev/null 2>&1; then
  deb=$(apt-cache madison rustc-web 2>/dev/null | awk -v v="$msrv" '$3 ~ "^"v"[.+]" {print $3; exit}')
  if [ -n "$deb" ]; then
    echo "installing Rust $msrv from Debian (rustc-web $deb)"
    pkgs=("rustc-web=$deb" "cargo-web=$deb" "libstd-rust-web-dev=$deb")
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --allow-downgrades "${pkgs[@]}" >/dev/null \
      || { apt-get update -q >/dev/null &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --allow-downgrades "${pkgs[@]}" >/dev/null; }
    # The packages install rustc and cargo under /usr; rustup runs them as a linked toolchain.
    if [ "$(/usr/bin/rustc -V | awk '{print $2}')" = "$msrv.0" ] || [ "$(/usr/bin/rustc -V | awk '{print $2}')" = "$msrv" ]; then
      rustup toolchain link "$linked" /usr
      toolchain=$linked
    fi
  fi
fi
if [ -z "$toolchain" ]; then
  echo "no Rust $msrv toolchain: install one (rustup toolchain install $msrv), or link one into rustup as $linked (rustup toolchain link $linked <sysroot>)" >&2
  exit 1
fi
echo "MSRV toolchain: $toolchain ($(rustc +"$toolchain" -V))"
target="${CARGO_TARGET_DIR:-target}/msrv"
features=sqlite,postgres,postgres-tls,derive,serde,metrics,tracing,time
CARGO_TARGET_DIR="$target" cargo +"$toolchain" check --locked --lib --features "$features"
CARGO_TARGET_DIR="$target" cargo +"$toolchain" check --locked --lib --no-default-features --features sqlite
