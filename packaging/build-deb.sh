#!/usr/bin/env bash
# Builds the Debian package target/debian/latscope_VERSION-1_ARCH.deb:
# the release binary and the lean cyclictest drop-in, then the man pages and shell completion scripts that
# binary generates from its own command-line definitions, then `cargo deb`
# with those files as assets (Cargo.toml, [package.metadata.deb]).
# Extra arguments go to cargo deb (e.g. --fast). Needs cargo-deb once:
#   cargo install cargo-deb --locked
set -euo pipefail
cd "$(dirname "$0")/.."

if ! cargo deb --version >/dev/null 2>&1; then
  echo "build-deb.sh: cargo-deb is missing; install it once with: cargo install cargo-deb --locked" >&2
  exit 2
fi

cargo build --release --locked
# The cyclictest drop-in as shipped: linked whole (Cargo.toml, [profile.dropin]).
cargo build --profile dropin --locked --bin latscope-cyclictest
# Where cargo put the binary (CARGO_TARGET_DIR or build.target-dir may move it);
# cargo deb maps the assets' target/release/ prefix to the same place.
target_dir=$(cargo metadata --no-deps --format-version 1 | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
latscope="$target_dir/release/latscope"
generated="$target_dir/release/packaging"

rm -rf "$generated"
mkdir -p "$generated"
cp "$target_dir/dropin/latscope-cyclictest" "$generated/latscope-cyclictest"
"$latscope" manpages --out "$generated/man"
# Debian policy wants man pages compressed; cargo deb compresses only assets
# it did not take from target/release/, so they are compressed here.
gzip -9n "$generated"/man/man1/*.1 "$generated"/man/compat/man1/*.1
mkdir -p "$generated/completions"
"$latscope" completions bash >"$generated/completions/latscope.bash"
"$latscope" completions zsh >"$generated/completions/_latscope"
"$latscope" completions fish >"$generated/completions/latscope.fish"

cargo deb --no-build "$@"
