# Rerun Gate — the two commands of the README, and the pieces they are made of.
#   make run    installs what is missing, builds, serves http://127.0.0.1:3000 with demo data (SQLite)
#   make test   installs what is missing, runs unit, integration (SQLite and PostgreSQL) and browser tests
#   make fuzz   fuzzes the parsers that face the outside, FUZZ_SECONDS (60) each (not part of make test)
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := run

CARGO_LEPTOS_VERSION := 0.3.10
# The view! formatter (leptosfmt.toml), checked by `make lint` (installed for it, not for `make run`).
LEPTOSFMT_VERSION := 0.1.33
# The CLI must equal the wasm-bindgen crate in Cargo.lock.
WASM_BINDGEN_VERSION := $(shell awk '/^name = "wasm-bindgen"$$/ { getline; gsub(/"/, "", $$3); print $$3 }' Cargo.lock)
# cargo-leptos builds with these; tests use the same, so both share one set of compiled crates.
BUILD_ENV := LEPTOS_OUTPUT_NAME=rerun-gate RUSTFLAGS="--cfg erase_components"
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Each long step says what it is and how long it took on a fresh 2-core machine (scripts/newcomer-time.sh).
STEP := scripts/step.sh

.PHONY: run test stories disk-check bench fuzz deps deps-build deps-lint deps-test site release docs-check lint fmt unit-tests sqlite-tests postgres-tests api-fuzz kits-tests bundle-test browser-tests

# The demo's secrets are fixed, public ones (loopback only): inbound webhooks and the signed reruns.
DEMO_WEBHOOK_SECRET ?= whsec_ZGVtby1vbmx5LXdlYmhvb2stc2VjcmV0LTIwMjY=
DEMO_RERUN_SECRET ?= whsec_ZGVtby1vbmx5LXJlcnVuLXNpZ25pbmctMjAyNg==
export RERUN_GATE_SECRET_ORDER_INTAKE ?= $(DEMO_RERUN_SECRET)
export RERUN_GATE_SECRET_MONTHLY_BILLING ?= $(DEMO_RERUN_SECRET)

## The demo's audit signing key lives beside its database (a real installation keeps it elsewhere: see
## docs/operations.md). The build is `make site`'s, the one the tests use: `make test` after `make run` builds nothing
## again (a build with other file names or flags would rebuild every crate).
run: deps-build site
	mkdir -p data
	[ -f data/audit-signing.key ] || target/debug/server audit keygen --file data/audit-signing.key >/dev/null
	[ -f data/audit-signing.key.witness ] || target/debug/server audit start-memory --file data/audit-signing.key
	RERUN_GATE_AUDIT_KEY_FILE=$${RERUN_GATE_AUDIT_KEY_FILE:-data/audit-signing.key} \
	LEPTOS_SITE_ROOT=target/site LEPTOS_OUTPUT_NAME=rerun-gate \
	RERUN_GATE_WEBHOOK_SECRET_AI=$${RERUN_GATE_WEBHOOK_SECRET_AI:-$(DEMO_WEBHOOK_SECRET)} \
	LEPTOS_SITE_ADDR=$${LEPTOS_SITE_ADDR:-127.0.0.1:3000} target/debug/server serve --demo

test: disk-check deps-build deps-lint deps-test docs-check lint unit-tests sqlite-tests site api-fuzz kits-tests postgres-tests bundle-test browser-tests
	@echo "all tests passed"

deps: deps-build deps-lint deps-test

## A clean clone's `make test` leaves 9.7 GB under target/ (clippy's builds, the debug server and its tests, the
## site; measured 2026-12-07 with .ci/run, 10.2 GB at its peak with the tests' files): a fuller disk is said at once.
disk-check:
	@scripts/check-disk.sh 11 "make test"

## What building needs: the wasm target, cargo-leptos and wasm-bindgen at pinned versions, built at the same time
## with a profile that compiles quickly (scripts/install-tools.sh says how long each takes).
deps-build:
	@scripts/install-tools.sh $(CARGO_LEPTOS_VERSION) $(WASM_BINDGEN_VERSION)

## What `make lint` needs besides: the view! formatter, at its pinned version (not `make run`'s to wait for).
deps-lint: deps-build
	@scripts/install-tools.sh $(CARGO_LEPTOS_VERSION) $(WASM_BINDGEN_VERSION) $(LEPTOSFMT_VERSION)

## What testing needs: Chromium, PostgreSQL server binaries, Japanese and emoji fonts for the screenshots, LibreOffice
## Calc (the exports opened in a spreadsheet) from Debian, the browser-test npm packages, Slack's Python SDK, and the
## client kits (clients/python in target/kits-py-venv with its test tools; clients/typescript with npm ci, built).
SLACK_SDK_VERSION := 3.48.0
# The SCIM compliance checker (python-scim's scim2-tester, with its HTTP engine) the directory's tests run.
SCIM_TESTER_VERSION := 0.5.2
deps-test:
	@missing=""; \
	  [ -x /usr/bin/chromium ] || missing="$$missing chromium chromium-driver"; \
	  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	  [ -d /usr/share/fonts/opentype/noto ] || missing="$$missing fonts-noto-cjk"; \
	  [ -f /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ] || missing="$$missing fonts-noto-color-emoji"; \
	  python3 -c "import cryptography" 2>/dev/null || missing="$$missing python3-cryptography"; \
	  python3 -c "import ensurepip, venv" 2>/dev/null || missing="$$missing python3-venv"; \
	  command -v openssl >/dev/null || missing="$$missing openssl"; \
	  if [ -n "$$missing" ]; then \
	    $(STEP) "installing$$missing from Debian (once, about 1 min)" bash -c "$(SUDO) apt-get update -qq \
	      && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing"; \
	  fi
	@command -v soffice >/dev/null || $(STEP) "installing LibreOffice Calc, which opens the exports in the tests (once, about 1 min)" \
	  bash -c "$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq \
	    --no-install-recommends libreoffice-calc-nogui"
	@[ -d end2end/node_modules/@playwright/test ] && [ -d end2end/node_modules/@axe-core/playwright ] \
	  || (cd end2end && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
	      ../$(STEP) "installing Playwright for the browser tests (npm ci, once, under a minute)" npm ci --no-audit --no-fund)
	@target/slack-venv/bin/python -c "import sys, slack_sdk.version as v; sys.exit(v.__version__ != '$(SLACK_SDK_VERSION)')" \
	  2>/dev/null || $(STEP) "installing Slack's SDK, which signs the tests' interactions as Slack does (slack_sdk, PyPI, once, seconds)" \
	     bash -c "rm -rf target/slack-venv && python3 -m venv target/slack-venv \
	       && target/slack-venv/bin/pip install --quiet --disable-pip-version-check slack_sdk==$(SLACK_SDK_VERSION)"
	@target/scim-venv/bin/python -c "import sys, importlib.metadata as m; sys.exit(m.version('scim2-tester') != '$(SCIM_TESTER_VERSION)')" \
	  2>/dev/null || $(STEP) "installing the SCIM compliance checker the directory's tests run (scim2-tester, PyPI, once, seconds)" \
	     bash -c "rm -rf target/scim-venv && python3 -m venv target/scim-venv \
	       && target/scim-venv/bin/pip install --quiet --disable-pip-version-check 'scim2-tester[httpx2]==$(SCIM_TESTER_VERSION)'"
	@[ -d scripts/oidc-provider/node_modules/oidc-provider ] \
	  || $(STEP) "installing the tests' identity provider (oidc-provider, npm ci, once, seconds)" \
	     npm ci --no-audit --no-fund --prefix scripts/oidc-provider
	@[ target/kits-py-venv/.installed -nt clients/python/pyproject.toml ] \
	  || $(STEP) "installing the Python client kit and its test tools (httpx, standardwebhooks, pytest, mypy; once, seconds)" \
	     bash -c "rm -rf target/kits-py-venv && python3 -m venv target/kits-py-venv \
	       && target/kits-py-venv/bin/pip install --quiet --disable-pip-version-check -e 'clients/python[test]' \
	       && touch target/kits-py-venv/.installed"
	@[ clients/typescript/node_modules/.package-lock.json -nt clients/typescript/package-lock.json ] \
	  || $(STEP) "installing the TypeScript client kit's packages (standardwebhooks, typescript, ajv; npm ci, once, seconds)" \
	     npm ci --no-audit --no-fund --prefix clients/typescript
	@npm run --silent build --prefix clients/typescript # the integration tests run its examples from dist/

## The server binary and the hydrating wasm bundle under target/site.
site: deps-build
	@$(STEP) "building the server and the site (cargo leptos build --split; about 6 min the first time)" \
	  cargo leptos build --split

## An optimised build, packed as it is deployed: target/bundle/release/rerun-gate-<version>-<arch>-linux/ (the
## server, its site with the file names it carries, the example configuration, DEPLOY.md, a systemd unit) and a
## .tar.gz of it (scripts/bundle.sh). wasm-opt comes from npm's binaryen: Debian's
## older binaryen silently produces a bundle that fails to hydrate.
## The browser bundle is built with a pinned nightly that rebuilds the standard library for size (-Zbuild-std,
## optimize_for_size), with panics that abort at once without message or source location, and derived Debug
## printing only names: the panic machinery, its messages and its paths were about a tenth of the first module
## with gzip. The server stays on stable; `make site` (stable, debug) keeps panic messages for finding one.
BINARYEN_VERSION := 132
WASM_NIGHTLY := nightly-2026-05-20
WASM_NIGHTLY_ENV := RUSTUP_TOOLCHAIN=$(WASM_NIGHTLY) CARGO_UNSTABLE_BUILD_STD=std,panic_abort \
  CARGO_UNSTABLE_BUILD_STD_FEATURES=optimize_for_size \
  CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="-Zunstable-options -Cpanic=immediate-abort -Zlocation-detail=none \
  -Zfmt-debug=shallow"
release: deps-build
	@[ -x target/tools/node_modules/.bin/wasm-opt ] \
	  || npm install --no-audit --no-fund --prefix target/tools binaryen@$(BINARYEN_VERSION)
	@rustup toolchain list | grep -q "^$(WASM_NIGHTLY)" || $(STEP) "installing Rust $(WASM_NIGHTLY) for the \
	  release bundle (once, under a minute)" rustup toolchain install $(WASM_NIGHTLY) --profile minimal -c rust-src
	@$(STEP) "building the release bundle (about 8 min the first time)" env $(WASM_NIGHTLY_ENV) \
	  PATH="$$PWD/target/tools/node_modules/.bin:$$PATH" cargo leptos build --release --precompress --split --frontend-only
	@$(STEP) "building the release server (about 12 min the first time)" \
	  cargo leptos build --release --precompress --split --server-only
	@for wasm in target/site/pkg/rerun-gate.*.wasm; do \
	  echo "wasm bundle $$wasm: $$(stat -c %s $$wasm) bytes, $$(gzip -9c $$wasm | wc -c) gzipped, $$(stat -c %s $$wasm.br 2>/dev/null || echo '?') brotli"; \
	done
	@echo "largest page chunk (gzip -9 bytes): $$(for f in target/site/pkg/split_*.wasm; do echo "$$(gzip -9c $$f | wc -c) $$(basename $$f)"; done | sort -n | tail -1)"
	@scripts/bundle.sh release

## Benchmarks (not part of `make test`): figures next to baselines measured in the same run; writes bench/RESULTS.md
## (bench/RESULTS.postgres.md with BENCH_DATABASE_URL=postgres://…).
## Depends on `release` so that the browser bundle it reports is the optimised one.
bench: release
	@$(STEP) "the release bundle, deployed as DEPLOY.md says (under a minute)" scripts/bundle-test.sh release
	@command -v sqlite3 >/dev/null \
	  || ($(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq sqlite3)
	$(BUILD_ENV) cargo build --release -p server --features ssr --bin server
	$(BUILD_ENV) cargo run --release -p server --features ssr --example bench

## Fuzzing (not part of `make test`): each target of fuzz/fuzz_targets for FUZZ_SECONDS, with cargo-fuzz on
## nightly. Seeds are fuzz/seeds/<target>; the corpus the fuzzer grows stays in target/fuzz/corpus/<target>, and
## crashing inputs land in fuzz/artifacts/<target> (both ignored by git). A crash fails the run after every
## target has had its turn. One target: make fuzz FUZZ_TARGETS=config_parse FUZZ_SECONDS=600
CARGO_FUZZ_VERSION := 0.13.2
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= canonical_json webhook_verify csv_neutralise export_check config_parse
fuzz:
	@rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
	@cargo fuzz --version 2>/dev/null | grep -q " $(CARGO_FUZZ_VERSION)$$" \
	  || cargo install cargo-fuzz --version =$(CARGO_FUZZ_VERSION) --locked
	@failed=""; \
	for t in $(FUZZ_TARGETS); do \
	  features=""; if [ "$$t" = config_parse ]; then features="--features ssr"; fi; \
	  seeds=""; if [ -d "fuzz/seeds/$$t" ]; then seeds="fuzz/seeds/$$t"; fi; \
	  mkdir -p "target/fuzz/corpus/$$t"; \
	  echo "== fuzz $$t for $(FUZZ_SECONDS) s"; \
	  $(BUILD_ENV) cargo +nightly fuzz run --fuzz-dir fuzz --target-dir "$(CURDIR)/target/fuzz" --debug-assertions \
	    $$features "$$t" "target/fuzz/corpus/$$t" $$seeds -- -max_total_time=$(FUZZ_SECONDS) \
	    || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: crashes in$$failed (inputs in fuzz/artifacts/)"; exit 1; fi; \
	echo "fuzz: no crash, $(FUZZ_SECONDS) s per target"

## Formatting (rustfmt.toml, and leptosfmt.toml for the view! macros) and clippy with warnings as errors, for the
## server build and the browser build: the first test step, as it is the quickest to fail.
lint: deps-build deps-lint
	cargo fmt --all -- --check
	leptosfmt --check app/src | grep -v "^✅"
	@$(BUILD_ENV) $(STEP) "clippy, server build (about 4 min the first time)" \
	  cargo clippy --workspace --all-targets --features ssr -- -D warnings
	@$(BUILD_ENV) $(STEP) "clippy, browser build (about 3 min the first time)" \
	  cargo clippy -p app --lib --target wasm32-unknown-unknown --no-default-features --features hydrate -- -D warnings

## Every relative link and image of the Markdown files resolves (anchors included), and the README stays the
## front door (scripts/check-docs.py): the first test step, a second.
docs-check:
	@python3 scripts/check-docs.py

## Formats the code as `make lint` expects it: the view! macros, then the rest.
fmt: deps-build deps-lint
	leptosfmt --quiet app/src
	cargo fmt --all

unit-tests:
	@$(BUILD_ENV) $(STEP) "unit tests (the domain, contract, words, backend and app crates; building them takes about 2 min the first time)" \
	  cargo test -p domain -p contract -p words -p backend -p app --features app/ssr

sqlite-tests:
	@$(BUILD_ENV) RERUN_GATE_TEST_ENGINE=sqlite $(STEP) \
	  "integration tests on SQLite (building them takes about 3 min the first time; the tests about 3 min)" \
	  cargo test -p server --features ssr

## schemathesis (pinned, in target/venv) against /api/openapi.json of the built server on a fresh SQLite database:
## no 5xx, every answer as documented, no SQL or panic text in a body (scripts/api-fuzz.sh). The build is a no-op
## after sqlite-tests, which builds the same binary.
api-fuzz:
	$(BUILD_ENV) cargo build -p server --features ssr --bin server
	@$(STEP) "API fuzzing (schemathesis, about 1 min)" scripts/api-fuzz.sh

## The client kits' own tests (pytest with mypy --strict; tsc strict and node --test) against the OpenAPI document
## this server serves, so that a change of the API fails here rather than at an integration. Their examples run
## against the real server in the integration tests (server/tests/it/client_kits.rs).
kits-tests:
	$(BUILD_ENV) cargo build -p server --features ssr --bin server
	target/debug/server openapi > target/openapi.json
	@RERUN_GATE_OPENAPI=$$PWD/target/openapi.json $(STEP) "the Python client kit's tests (pytest, seconds)" \
	  target/kits-py-venv/bin/pytest -q -p no:cacheprovider clients/python
	@RERUN_GATE_OPENAPI=$$PWD/target/openapi.json $(STEP) "the TypeScript client kit's tests (tsc, node --test, seconds)" \
	  npm test --silent --prefix clients/typescript

## The stories alone (server/tests/stories, also part of both integration runs): each case the demo loads from the
## seed, played by its people from the stalled board to the completed operation and the auditor's proof, on
## SQLite and then PostgreSQL; each story prints its time.
stories: deps-test
	@$(BUILD_ENV) RERUN_GATE_TEST_ENGINE=sqlite $(STEP) "the stories on SQLite (seconds once built)" \
	  cargo test -p server --features ssr --test stories -- --nocapture
	@$(BUILD_ENV) RERUN_GATE_TEST_ENGINE=postgres $(STEP) "the stories on PostgreSQL (seconds once built)" \
	  scripts/with-postgres.sh cargo test -p server --features ssr --test stories -- --nocapture

postgres-tests:
	@$(BUILD_ENV) RERUN_GATE_TEST_ENGINE=postgres $(STEP) "integration tests on PostgreSQL (about 6 min)" \
	  scripts/with-postgres.sh cargo test -p server --features ssr

## The debug build `make site` made, packed by the same step as a release and deployed as DEPLOY.md says, far from
## this checkout: styled, hydrating pages with none of their files missing (make bench checks the release bundle).
bundle-test:
	@$(STEP) "the bundle, deployed as DEPLOY.md says (under a minute)" scripts/bundle-test.sh debug

browser-tests:
	@$(STEP) "browser tests (Playwright and Chromium, about 5 min)" end2end/run.sh
