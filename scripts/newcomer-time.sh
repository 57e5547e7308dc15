#!/usr/bin/env bash
# How long a newcomer waits for the first page: clones this repository (its committed HEAD) into an empty folder
# with an empty CARGO_HOME (only the toolchain's commands linked in; crates are downloaded again and cargo-leptos
# and wasm-bindgen-cli installed again), times `make run` until /readyz answers, stops it, then times `make test`
# in the same clone. Prints the split (tools, build, start, each step of make test) from the steps' own lines.
# The machine's Debian packages and rustup toolchains are kept: on a machine without them, add the times the
# steps that install them print.
#   scripts/newcomer-time.sh [FOLDER]   (default: a new folder under /tmp, kept afterwards for its logs)
#   NEWCOMER_RUN_ONLY=1 scripts/newcomer-time.sh   times `make run` only
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d /tmp/rerun-gate-newcomer.XXXXXX)}"
mkdir -p "$work"
[ -z "$(ls -A "$work")" ] || { echo "$work is not empty" >&2; exit 1; }
# mktemp makes the folder private; run as root, `make test` starts PostgreSQL as the postgres user, who must reach
# the clone's target/ (a clone anywhere else is readable as usual).
chmod a+rx "$work"

# An empty CARGO_HOME that still finds the toolchain (rustup's proxies: cargo, rustc, rustup…).
toolchain_bin="$(dirname "$(command -v cargo)")"
export CARGO_HOME="$work/cargo-home"
mkdir -p "$CARGO_HOME/bin"
for tool in cargo cargo-clippy cargo-fmt clippy-driver rustc rustdoc rustfmt rustup; do
  ln -s "$toolchain_bin/$tool" "$CARGO_HOME/bin/"
done
PATH="$CARGO_HOME/bin:$(echo "$PATH" | tr ':' '\n' | grep -vx "$toolchain_bin" | paste -sd:)"
export PATH
unset CARGO_TARGET_DIR

git clone --quiet "$repo" "$work/rerun-gate"
cd "$work/rerun-gate"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# Each line of output with the seconds since the start of its command.
stamped() { local began=$SECONDS; while IFS= read -r line; do printf '%5d %s\n' $((SECONDS - began)) "$line"; done; }

began=$SECONDS
setsid bash -c "LEPTOS_SITE_ADDR=127.0.0.1:$port make run" > >(stamped >"$work/make-run.log") 2>&1 &
run_pid=$!
until curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; do
  kill -0 $run_pid 2>/dev/null || { echo "make run ended before /readyz answered: $work/make-run.log" >&2; exit 1; }
  sleep 1
done
first_page=$((SECONDS - began))
kill -- -$run_pid 2>/dev/null || true
wait $run_pid 2>/dev/null || true

minutes() { printf '%d min %02d s' $(($1 / 60)) $(($1 % 60)); }
built_at=$(awk '/==> done in .*the site/ { print $1 }' "$work/make-run.log")
echo "make run: first page after $(minutes $first_page), $((first_page - ${built_at:-0})) s of it starting the server"
grep -h '==> \|installed (' "$work/make-run.log" | sed 's/^ *\([0-9]*\) /  at \1 s: /'
[ -z "${NEWCOMER_RUN_ONLY:-}" ] || exit 0

began=$SECONDS
status=0
make test > >(stamped >"$work/make-test.log") 2>&1 || status=$?
test_total=$((SECONDS - began))
sleep 1 # the last lines of the log

echo "make test right after: $(minutes $test_total) (exit status $status)"
grep -h '==> done in' "$work/make-test.log" | sed 's/^ *[0-9]* /  /'
echo "logs: $work/make-run.log, $work/make-test.log"
exit $status
