#!/usr/bin/env bash
# The server and the site for `make run`, as soon as two cores allow on a fresh machine. The server needs neither
# cargo-leptos nor wasm-bindgen-cli, so it is built while they are installed (with cargo-leptos' own flags, so
# that cargo-leptos finds it built); then cargo-leptos builds the browser bundle (its own target/front) and links
# the site (its own build of the server waits for the first one and finds it done). Each of the three is CPU-bound only part of the time (a last big crate, a link): side by side they fill
# both cores.
# usage: scripts/build-site.sh CARGO_LEPTOS_VERSION WASM_BINDGEN_VERSION
set -euo pipefail
cd "$(dirname "$0")/.."
logs=target/tools/logs
mkdir -p "$logs"

echo "==> building the server beside the tools (once about 4 min; log: $logs/server.log)…"
# What cargo-leptos builds the server with (bin-features = ["ssr"], no default features; its environment).
LEPTOS_OUTPUT_NAME=rerun-gate RUSTFLAGS="--cfg erase_components" \
  cargo build -p server --bin server --no-default-features --features ssr >"$logs/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
scripts/install-tools.sh "$@"

scripts/step.sh "building the site (cargo leptos build --split; about 3 min the first time)" cargo leptos build --split
wait $server || { echo "building the server failed; the end of $logs/server.log:" >&2; tail -n 30 "$logs/server.log" >&2; exit 1; }
trap - EXIT
