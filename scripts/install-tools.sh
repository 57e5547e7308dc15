#!/usr/bin/env bash
# The build tools `make run` and `make test` need, each installed once when missing: the wasm target, and
# cargo-leptos and wasm-bindgen-cli at pinned versions; with a third version, leptosfmt too (the view! formatter
# `make lint` checks with; `make run` does not wait for it). The tools build at the same time, with a
# profile that compiles quickly: they spend their time waiting for cargo and rustc, so their own speed hardly
# matters, and their release profile (LTO, one codegen unit) takes most of an install on two cores.
# usage: scripts/install-tools.sh CARGO_LEPTOS_VERSION WASM_BINDGEN_VERSION [LEPTOSFMT_VERSION]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo_leptos_version=$1
wasm_bindgen_version=$2
leptosfmt_version=${3:-}
logs=target/tools/logs
source scripts/step.sh

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  step_start "adding the wasm32-unknown-unknown target (once, about 1 min)"
  rustup target add wasm32-unknown-unknown
  step_done
fi

# cargo-leptos links OpenSSL (through cargo-generate, which it uses for `cargo leptos new`) and asks for its own
# copy built from C, the longest part of its install: 5 min 31 s with it, 3 min 56 s without on a 2-core machine.
# OPENSSL_NO_VENDOR makes it link Debian's instead, whose headers it finds with pkg-config.
if ! cargo leptos --version 2>/dev/null | grep -q " $cargo_leptos_version$" \
  && ! { command -v pkg-config >/dev/null && pkg-config --exists openssl; }; then
  sudo=$([ "$(id -u)" = 0 ] || echo sudo)
  step_start "installing OpenSSL's headers and pkg-config from Debian, for cargo-leptos (once, seconds)"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libssl-dev pkg-config
  step_done
fi
export OPENSSL_NO_VENDOR=1

# What each install takes on a fresh 2-core machine with this profile (scripts/newcomer-time.sh).
declare -A minutes=([cargo-leptos]=4 [wasm-bindgen-cli]=2 [leptosfmt]=2)
declare -A pids=()
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
  CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_DEBUG=false
mkdir -p "$logs"

install_tool() { # name version [cargo install arguments]
  local name=$1 version=$2
  shift 2
  echo "installing $name $version (once, about ${minutes[$name]} min; log: $logs/$name.log)"
  cargo install "$name" --version "=$version" "$@" >"$logs/$name.log" 2>&1 &
  pids[$name]=$!
}

cargo leptos --version 2>/dev/null | grep -q " $cargo_leptos_version$" \
  || install_tool cargo-leptos "$cargo_leptos_version" --locked --features no_downloads
# Not --locked: its lock file names a webpki-roots release that crates.io no longer offers.
wasm-bindgen --version 2>/dev/null | grep -q " $wasm_bindgen_version$" \
  || install_tool wasm-bindgen-cli "$wasm_bindgen_version"
[ -z "$leptosfmt_version" ] || leptosfmt --version 2>/dev/null | grep -q " $leptosfmt_version$" \
  || install_tool leptosfmt "$leptosfmt_version" --locked
[ ${#pids[@]} -gt 0 ] || exit 0

step_start "building ${!pids[*]}"
failed=""
while [ ${#pids[@]} -gt 0 ]; do
  for name in "${!pids[@]}"; do
    if ! kill -0 "${pids[$name]}" 2>/dev/null; then
      if wait "${pids[$name]}"; then
        echo "$name installed ($(step_elapsed))"
      else
        echo "installing $name failed; the end of $logs/$name.log:" >&2
        tail -n 30 "$logs/$name.log" >&2
        failed="$failed $name"
      fi
      unset "pids[$name]"
    fi
  done
  [ ${#pids[@]} -eq 0 ] || step_tick 5 "still building ${!pids[*]}"
done
[ -z "$failed" ] || exit 1
step_done
