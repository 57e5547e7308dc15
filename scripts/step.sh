#!/usr/bin/env bash
# Says where a long step of `make run` / `make test` is: one line when it starts (what it is and how long it took
# when last measured), a line each minute it stays quiet, and the time it took when it ends.
#   scripts/step.sh "building the server and the site (first time about 9 min)" cargo leptos build --split
# or, sourced: step_start "…"; …; step_tick SECONDS "still …"; step_done

step_start() {
  step_what=$1
  step_began=$SECONDS
  step_last_tick=$SECONDS
  echo "==> $step_what…"
}

step_elapsed() {
  local s=$((SECONDS - step_began))
  if [ $s -ge 60 ]; then echo "$((s / 60)) min $((s % 60)) s"; else echo "$s s"; fi
}

# Sleeps SECONDS; says MESSAGE with the elapsed time once a minute.
step_tick() {
  sleep "$1"
  if [ $((SECONDS - step_last_tick)) -ge 60 ]; then
    step_last_tick=$SECONDS
    echo "    … $2 ($(step_elapsed))"
  fi
}

step_done() {
  echo "==> done in $(step_elapsed): $step_what"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  step_start "$1"
  shift
  "$@"
  step_done
fi
