#!/usr/bin/env bash
# Fuzzes the ingestion API from its own OpenAPI document (QUALITY 16-17): schemathesis, pinned, in a local
# virtual environment (target/venv), against the built server on a free loopback port with a fresh SQLite
# database and an API token of the example configuration's `sales` department. Fails on any 5xx, any answer
# that its OpenAPI document does not describe (status, content type, headers, schema), accepted invalid data,
# and SQL or panic text in any body (scripts/api_fuzz_hooks.py). The server is stopped afterwards, even on
# failure; its log is printed when the run fails.
#   API_FUZZ_EXAMPLES  schemathesis' --max-examples, the generation budget per operation (default 400)
#   API_FUZZ_SEED      replay a run (schemathesis prints the seed it used)
#   SERVER_BIN         the server binary (default target/debug/server)
# Arguments are passed on to `schemathesis run` (e.g. --include-path-regex events, --exclude-checks …).
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
venv="$PWD/target/venv"
work="$PWD/target/api-fuzz"
server="${SERVER_BIN:-target/debug/server}"
[ -x "$server" ] || { echo "$server is missing: build it first (make sqlite-tests)" >&2; exit 1; }

# The virtual environment is reused while it holds the pinned version.
if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -q " $SCHEMATHESIS_VERSION$"; then
  if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then  # Debian's python3 keeps venv in its own package
    sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv
  fi
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi

rm -rf "$work" && mkdir -p "$work"
export DATABASE_URL="sqlite://$work/rerun-gate.db?mode=rwc"
export LEPTOS_SITE_ROOT="$PWD/target/site" LEPTOS_OUTPUT_NAME=rerun-gate
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export LEPTOS_SITE_ADDR="127.0.0.1:$port"
base="http://$LEPTOS_SITE_ADDR"
# The example configuration, its demo rerun receiver on this server's port; throw-away secrets.
sed "s#http://127.0.0.1:3000#$base#" rerun-gate.toml > "$work/rerun-gate.toml"
export RERUN_GATE_CONFIG="$work/rerun-gate.toml"
export RERUN_GATE_SECRET_ORDER_INTAKE="whsec_YXBpLWZ1enotb25seS1yZXJ1bi1zaWduaW5nLTIwMjY="
export RERUN_GATE_SECRET_MONTHLY_BILLING="$RERUN_GATE_SECRET_ORDER_INTAKE"
export RERUN_GATE_WEBHOOK_SECRET_AI="$RERUN_GATE_SECRET_ORDER_INTAKE"

token=$("$server" token create --name api-fuzz --department sales 2>"$work/token.log") \
  || { cat "$work/token.log" >&2; exit 1; }

NO_COLOR=1 "$server" serve > "$work/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true' EXIT INT TERM
ready() { python3 -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=2)" "$base/readyz" 2>/dev/null; }
for _ in $(seq 1 150); do ready && break; sleep 0.2; done
ready || { echo "the server did not become ready" >&2; cat "$work/server.log" >&2; exit 1; }

# Schema-valid data may still break rules the document cannot express (the workflow must be configured, its
# steps given in order, a failed event needs an error…): those answers are 422, 404 or 409, never 400 or 5xx.
cat > "$work/schemathesis.toml" <<'TOML'
[checks.positive_data_acceptance]
expected-statuses = ["2XX", "404", "409", "422"]
TOML
seed=()
[ -n "${API_FUZZ_SEED:-}" ] && seed=(--seed "$API_FUZZ_SEED")
hooks="$PWD/scripts/api_fuzz_hooks.py"
started=$SECONDS
set +e
# From $work: schemathesis reads schemathesis.toml and keeps its replays of failures in the working directory.
(cd "$work" && PYTHONDONTWRITEBYTECODE=1 SCHEMATHESIS_HOOKS="$hooks" "$venv/bin/schemathesis" run "$base/api/openapi.json" \
  --header "Authorization: Bearer $token" \
  --checks all \
  --phases examples,coverage,fuzzing,stateful \
  --mode all \
  --max-examples "${API_FUZZ_EXAMPLES:-400}" \
  "${seed[@]}" \
  --workers 2 \
  --request-timeout 10 \
  --generation-database none \
  --output-sanitize false \
  --report junit,ndjson --report-dir "$work/report" \
  --no-color "$@")
rc=$?
set -e
echo "api-fuzz: schemathesis took $((SECONDS - started)) s; the answers it got, per operation:"
# How deep the run went (registrations that reached 201, events that were applied…), from its NDJSON report.
"$venv/bin/python" - "$work"/report/ndjson-*.ndjson <<'PY' || true
import collections, json, sys
statuses = collections.defaultdict(collections.Counter)
for line in open(sys.argv[1], encoding="utf-8"):
    finished = json.loads(line).get("ScenarioFinished")
    for case_id, interaction in ((finished or {}).get("recorder") or {}).get("interactions", {}).items():
        if interaction.get("response"):
            request = finished["recorder"]["cases"][case_id]["value"]
            statuses[f"{request['method']} {request['path']}"][interaction["response"]["status_code"]] += 1
for operation, counts in sorted(statuses.items()):
    print(f"  {operation}: " + ", ".join(f"{status}×{n}" for status, n in sorted(counts.items())))
PY
if [ "$rc" != 0 ]; then
  # The reproductions (curl commands, the token included: it is this run's own) are above; the server's side here.
  echo "--- api-fuzz failed ($rc); the server's errors and warnings (last 60; the whole log: $work/server.log):" >&2
  grep -E ' (ERROR|WARN) |panicked' "$work/server.log" | tail -n 60 >&2 || tail -n 60 "$work/server.log" >&2
  exit "$rc"
fi
# A panic anywhere in the server (a background task too) fails the run even when no answer showed it.
if grep -q 'panicked' "$work/server.log"; then
  echo "--- api-fuzz: the server panicked:" >&2
  grep -B2 -A5 'panicked' "$work/server.log" | head -n 80 >&2
  exit 1
fi
