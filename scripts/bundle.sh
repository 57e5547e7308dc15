#!/usr/bin/env bash
# Packs a built server and its site into one self-contained folder and a .tar.gz of it, as they are deployed
# (docs/deploy/DEPLOY.md): the server finds the site beside itself, and the site carries its own file names
# (site/hash.txt), wherever the folder is copied.
#   scripts/bundle.sh release   after `make release` (what `make release` itself runs)
#   scripts/bundle.sh debug     after `make site` (what `make test` checks, with the build it already has)
# Prints the tarball's path on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${1:?usage: scripts/bundle.sh release|debug}

version=$(awk -F'"' '/^\[workspace.package\]/ { p = 1 } p && /^version/ { print $2; exit }' Cargo.toml)
name="rerun-gate-$version-$(uname -m)-linux"
out="target/bundle/$profile"
folder="$out/$name"
binary="target/$profile/server"
hashes="target/$profile/hash.txt"

[ -x "$binary" ] || { echo "no $binary: build it first (make release, or make site for debug)" >&2; exit 1; }
[ -f "$hashes" ] || { echo "no $hashes: the site was not built with hashed names (make release / make site)" >&2; exit 1; }

# The site's own files, named in hash.txt (and, for split bundles, the chunks its manifest lists); target/site
# may also hold an earlier build's files, which the bundle leaves out.
wanted() {
  local manifest=""
  while IFS=: read -r kind hash; do
    hash=${hash// /}
    case $kind in
      js | wasm | css) echo "rerun-gate.$hash.$kind" ;;
      manifest) manifest="__wasm_split_manifest.$hash.json"; echo "$manifest" ;;
      split) echo "__wasm_split.$hash.js" ;;
    esac
  done < "$hashes"
  if [ -n "$manifest" ]; then
    # The manifest maps each lazy page to the wasm chunks it loads, named without their extension.
    python3 - "target/site/pkg/$manifest" <<'PY'
import json, sys
chunks = {c for page in json.load(open(sys.argv[1])).values() for c in page}
print('\n'.join(sorted(c if c.endswith('.wasm') else c + '.wasm' for c in chunks)))
PY
  fi
}

rm -rf "$folder" "$out/$name.tar.gz"
mkdir -p "$folder/site/pkg"
cp "$binary" "$folder/server"
cp "$hashes" "$folder/site/hash.txt"
# The assets folder (public/: robots.txt), as cargo-leptos copies it to the site root.
cp -r public/. "$folder/site/"
for file in $(wanted | sort -u); do
  [ -f "target/site/pkg/$file" ] || { echo "the site lacks target/site/pkg/$file (named by $hashes)" >&2; exit 1; }
  # With the compressed copies a release build leaves beside them (served as they are).
  cp target/site/pkg/"$file"* "$folder/site/pkg/"
done
cp rerun-gate.toml "$folder/rerun-gate.example.toml"
sed "s/@BUNDLE@/$name/g" docs/deploy/DEPLOY.md > "$folder/DEPLOY.md"
cp docs/deploy/rerun-gate.service "$folder/"
tar -C "$out" -czf "$out/$name.tar.gz" "$name"
echo "bundle $folder: $(du -sh "$folder" | cut -f1), $(find "$folder" -type f | wc -l) files;" \
  "$(stat -c %s "$out/$name.tar.gz") bytes as $out/$name.tar.gz"
echo "$out/$name.tar.gz"
