#!/usr/bin/env bash
# The debug build `make run` serves and the tests use: the browser's wasm and the server, built side by side.
# `cargo leptos build` builds them one after the other when file names carry hashes (as ours do), and each half
# ends with a long stretch on one core (the app crate, linking, splitting); side by side, each fills the other's
# idle core. The two use target dirs of their own (target/front and target), so their cargo locks never meet;
# the front half writes target/site and target/debug/hash.txt, the server half neither.
set -uo pipefail
cd "$(dirname "$0")/.."
cargo leptos build --split --frontend-only &
front=$!
cargo leptos build --server-only
server=$?
wait $front
front_status=$?
[ $front_status -eq 0 ] || echo "building the browser's wasm failed (status $front_status)" >&2
[ $server -eq 0 ] || echo "building the server failed (status $server)" >&2
[ $front_status -eq 0 ] && [ $server -eq 0 ]
