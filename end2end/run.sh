#!/usr/bin/env bash
# Browser end-to-end suite: a fresh SQLite database with the demo users, the built server on a free port,
# Playwright driving Debian's Chromium against it. The server is stopped afterwards, even on failure.
set -euo pipefail
cd "$(dirname "$0")/.."

work="$PWD/target/e2e"
rm -rf "$work" && mkdir -p "$work" docs/screenshots
export DATABASE_URL="sqlite://$work/rerun-gate.db?mode=rwc"
export LEPTOS_SITE_ROOT="${LEPTOS_SITE_ROOT:-$PWD/target/site}" LEPTOS_OUTPUT_NAME=rerun-gate
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export LEPTOS_SITE_ADDR="127.0.0.1:$port"
server="${SERVER_BIN:-target/debug/server}"

# The demo's one-time passwords go to a file only the tests read.
"$server" demo load | awk '$1 ~ /^[a-z]+$/ && NF >= 4 && $1 != "sign" { print $1, $NF }' > "$work/credentials.txt"
[ -s "$work/credentials.txt" ] || { echo "demo load printed no credentials" >&2; exit 1; }
# API tokens the tests register operations with, one per department.
for department in sales billing; do
  echo "$department $("$server" token create --name "e2e-$department" --department "$department" 2>/dev/null)"
done > "$work/tokens.txt"
export RERUN_GATE_SWEEP_SECONDS=1
# The audit chain's checkpoints are signed, as `make run` signs them.
"$server" audit keygen --file "$work/audit-signing.key" > "$work/audit-signing.pub"
export RERUN_GATE_AUDIT_KEY_FILE="$work/audit-signing.key"
# The demo workflows send their reruns to the demo receiver of this very server (on its free port).
sed "s#http://127.0.0.1:3000#http://$LEPTOS_SITE_ADDR#" rerun-gate.toml > "$work/rerun-gate.toml"
export RERUN_GATE_CONFIG="$work/rerun-gate.toml"

# Company sign-in through a local OpenID Connect provider (oidc-provider, its own login page): takeda is in the
# group sales-approvers. Decisions need a sign-in within the last minute here, so that a test can outwait it.
echo '{"takeda": {"name": "武田 真一", "email": "takeda@example.jp", "groups": ["sales-approvers"]}}' > "$work/oidc-accounts.json"
export RERUN_GATE_OIDC_SECRET="e2e-only-oidc-client-secret"
node scripts/oidc-provider/provider.mjs "$work/oidc-accounts.json" rerun-gate "$RERUN_GATE_OIDC_SECRET" \
  "http://$LEPTOS_SITE_ADDR/sign-in/oidc/callback" "http://$LEPTOS_SITE_ADDR/sign-in" > "$work/oidc.out" 2>&1 &
provider=$!
trap 'kill $provider 2>/dev/null || true' EXIT INT TERM
for _ in $(seq 1 100); do grep -q '^listening on ' "$work/oidc.out" && break; sleep 0.1; done
issuer=$(sed -n 's/^listening on //p' "$work/oidc.out")
[ -n "$issuer" ] || { echo "the identity provider did not start" >&2; cat "$work/oidc.out" >&2; exit 1; }
cat >> "$RERUN_GATE_CONFIG" <<TOML

[sign_in]
fresh_minutes = 1

[sign_in.oidc]
issuer = "$issuer"
client_id = "rerun-gate"
client_secret_env = "RERUN_GATE_OIDC_SECRET"
scopes = ["openid", "profile", "email", "groups"]
allow_loopback = true

[[sign_in.oidc.group]]
group = "sales-approvers"
roles = ["manager"]
departments = ["sales"]
TOML

# Decisions in Slack: a stand-in for its Web API, and a second local provider playing Sign in with Slack (its
# ID tokens name the workspace T0RERUNGATE).
export RERUN_GATE_SLACK_TOKEN="xoxb-e2e-only" RERUN_GATE_SLACK_SIGNING_SECRET="e2e-only-slack-signing-secret"
export RERUN_GATE_SLACK_CLIENT_SECRET="e2e-only-slack-client-secret"
node scripts/slack-standin/standin.mjs "$RERUN_GATE_SLACK_TOKEN" "$work/slack-calls.jsonl" > "$work/slack.out" 2>&1 &
slack=$!
echo '{}' > "$work/slack-accounts.json"
node scripts/oidc-provider/provider.mjs "$work/slack-accounts.json" rerun-gate-slack "$RERUN_GATE_SLACK_CLIENT_SECRET" \
  "http://$LEPTOS_SITE_ADDR/account/slack/callback" > "$work/slack-oidc.out" 2>&1 &
slack_provider=$!
trap 'kill $provider $slack $slack_provider 2>/dev/null || true' EXIT INT TERM
for _ in $(seq 1 100); do grep -q '^listening on ' "$work/slack.out" && grep -q '^listening on ' "$work/slack-oidc.out" && break; sleep 0.1; done
slack_api=$(sed -n 's/^listening on //p' "$work/slack.out")
slack_issuer=$(sed -n 's/^listening on //p' "$work/slack-oidc.out")
[ -n "$slack_api" ] && [ -n "$slack_issuer" ] || { echo "the Slack stand-ins did not start" >&2; exit 1; }
cat >> "$RERUN_GATE_CONFIG" <<TOML

[chat.slack]
bot_token_env = "RERUN_GATE_SLACK_TOKEN"
signing_secret_env = "RERUN_GATE_SLACK_SIGNING_SECRET"
api_url = "$slack_api/api"
allow_loopback = true
channels = { sales = "C0SALES" }

[chat.slack.sign_in]
issuer = "$slack_issuer"
client_id = "rerun-gate-slack"
client_secret_env = "RERUN_GATE_SLACK_CLIENT_SECRET"
TOML
export RERUN_GATE_SECRET_ORDER_INTAKE="whsec_ZTJlLW9ubHktcmVydW4tc2lnbmluZy1zZWNyZXQ="
export RERUN_GATE_SECRET_MONTHLY_BILLING="$RERUN_GATE_SECRET_ORDER_INTAKE"

"$server" serve --demo > "$work/server.log" 2>&1 &
pid=$!
trap 'kill $pid $provider $slack $slack_provider 2>/dev/null || true; wait $pid $provider $slack $slack_provider 2>/dev/null || true' EXIT INT TERM
ready() { python3 -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=2)" "http://$LEPTOS_SITE_ADDR/readyz" 2>/dev/null; }
for _ in $(seq 1 150); do ready && break; sleep 0.2; done
ready || { echo "the server did not become ready" >&2; cat "$work/server.log" >&2; exit 1; }

cd end2end
BASE_URL="http://$LEPTOS_SITE_ADDR" CREDENTIALS_FILE="$work/credentials.txt" TOKENS_FILE="$work/tokens.txt" npx playwright test "$@" \
  || { echo "--- server log (last 50 lines) ---" >&2; tail -n 50 "$work/server.log" >&2; exit 1; }
