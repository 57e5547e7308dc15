#!/usr/bin/env bash
# Says at once, not a quarter of an hour into the build, when the disk cannot hold what a command builds under
# target/. A disk that fills mid-build stops cargo-leptos with a backtrace that hides the reason.
#   scripts/check-disk.sh GB "what needs it"
# GB is what a clean clone's run leaves under target/ (measured with .ci/run); a warm tree already holds part of
# it, so what target/ holds counts as built.
set -euo pipefail
need_gb=$1
what=$2
mkdir -p target
held_mb=$(du -sm target | cut -f1)
free_mb=$(df --output=avail -BM target | tail -1 | tr -dc 0-9)
short_mb=$((need_gb * 1024 - held_mb - free_mb))
if [ "$short_mb" -gt 0 ]; then
  gb() { awk -v mb="$1" 'BEGIN { printf "%.1f GB", mb / 1024 }'; }
  echo "The disk is too full for $what: a whole run writes about $need_gb GB under target/, which holds" \
    "$(gb "$held_mb") now, and $(gb "$free_mb") are free. Free $(gb "$short_mb") more (old clones under /tmp," \
    "another checkout's target/, or \`cargo clean\` here) and run it again." >&2
  exit 1
fi
