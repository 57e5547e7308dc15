#!/usr/bin/env bash
# Deploys a release bundle as DEPLOY.md says, into an empty folder far from this checkout, and checks in Chromium
# that its pages are styled, that none of their files is missing and that they hydrate (end2end/bundle).
#   scripts/bundle-test.sh debug     make test: the debug build it already has, packed by the same step
#   scripts/bundle-test.sh release   make bench: the release bundle itself
set -euo pipefail
cd "$(dirname "$0")/.."
checkout=$PWD
profile=${1:?usage: scripts/bundle-test.sh debug|release}
started=$SECONDS

# (Not `tee /dev/stderr`: where standard error is a file, reopening it truncates that file.)
packed=$(scripts/bundle.sh "$profile")
echo "$packed" >&2
tarball=$(tail -n 1 <<<"$packed")
# DEPLOY.md's /opt, /etc/rerun-gate and /var/lib/rerun-gate, inside an empty folder; the server runs from there.
root=$(mktemp -d /tmp/rerun-gate-deploy.XXXXXX)
trap 'rm -rf "$root"' EXIT
opt="$root/opt" etc="$root/etc/rerun-gate" var="$root/var/lib/rerun-gate"
mkdir -p "$opt" "$etc/signer" "$var"
chmod 0700 "$etc/signer" "$var"

# 1. Unpack.
tar -xzf "$tarball" -C "$opt"
name=$(basename "$tarball" .tar.gz)
ln -sfn "$opt/$name" "$opt/rerun-gate"
# 2. Configuration and environment (the example's workflows send reruns to their receiver on this port).
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed "s#http://127.0.0.1:3000#http://127.0.0.1:$port#" "$opt/rerun-gate/rerun-gate.example.toml" > "$etc/rerun-gate.toml"
secret="whsec_$(head -c 32 /dev/urandom | base64)"
cat > "$etc/env" <<ENV
DATABASE_URL=sqlite://$var/rerun-gate.db?mode=rwc
RERUN_GATE_CONFIG=$etc/rerun-gate.toml
RERUN_GATE_PUBLIC_URL=http://127.0.0.1:$port
LEPTOS_SITE_ADDR=127.0.0.1:$port
RERUN_GATE_AUDIT_KEY_FILE=$etc/signer/audit-signing.key
RERUN_GATE_SECRET_ORDER_INTAKE=$secret
RERUN_GATE_SECRET_MONTHLY_BILLING=$secret
RERUN_GATE_WEBHOOK_SECRET_AI=$secret
ENV
chmod 0640 "$etc/env"
cd "$var" # the service's working directory: nothing of the checkout is reachable by a relative path
server() { (set -a; . "$etc/env"; exec "$opt/rerun-gate/server" "$@"); }
# 3. The audit signing key.
server audit keygen --file "$etc/signer/audit-signing.key" > "$root/audit-signing.pub"
# 4. The first admin.
password="bundle-$(head -c 12 /dev/urandom | base64 | tr -d '/+=')"
printf '%s\n' "$password" | server user add --username admin --display-name "管理者" --role admin --password-stdin
# 5. Serve (as the systemd unit's ExecStart does).
# The subshell execs the server, so that $! is the server itself and the trap below stops it.
(set -a; . "$etc/env"; exec "$opt/rerun-gate/server" serve) > "$root/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$root"' EXIT
ready() { python3 -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=2)" "http://127.0.0.1:$port/readyz" 2>/dev/null; }
for _ in $(seq 1 150); do ready && break; kill -0 $pid 2>/dev/null || break; sleep 0.2; done
ready || { echo "the deployed server did not become ready" >&2; cat "$root/server.log" >&2; exit 1; }

# A server copied without its site stops at start and names the folder it looked in.
mkdir "$root/alone"
cp "$opt/rerun-gate/server" "$root/alone/server"
if (set -a; . "$etc/env"; LEPTOS_SITE_ADDR=127.0.0.1:0 exec "$root/alone/server" serve) > "$root/alone.log" 2>&1; then
  echo "a server without its site started" >&2; exit 1
fi
grep -q "the site's files are not in $var/target/site/pkg" "$root/alone.log" \
  || { echo "a server without its site did not say where it looked:" >&2; cat "$root/alone.log" >&2; exit 1; }

cd "$checkout/end2end"
BASE_URL="http://127.0.0.1:$port" ADMIN_PASSWORD="$password" npx playwright test --config bundle.config.ts \
  || { echo "--- deployed server's log (last 50 lines) ---" >&2; tail -n 50 "$root/server.log" >&2; exit 1; }
echo "bundle test ($profile): $(stat -c %s "$checkout/$tarball") bytes packed, deployed and checked in $((SECONDS - started)) s"
