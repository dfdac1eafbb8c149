#!/usr/bin/env bash
# THE test command of the project (README and .ci/run call it).
#
#   scripts/test.sh                     vet + all tests + short fuzz runs of every Fuzz target
#   scripts/test.sh ARGS...             vet the ./packages among ARGS, then go test ARGS
#                                       (e.g. scripts/test.sh -run Foo ./coreapi/...); no fuzzing
#
# It starts the real servers the tests need (installing them with apt on a bare Debian 12 if
# missing), exports where they are, and stops them on exit:
#   EDGEWAN_TEST_POSTGRES_URL   admin URL of a throwaway PostgreSQL (controller/store/storetest);
#                               if already set, that server is used and nothing is started
#   EDGEWAN_TEST_INFLUX_URL     URL of a throwaway InfluxDB 1.8 (telemetry/sink/influxtest); likewise
# Mosquitto is installed here; each test starts its own (controller/mqtt/mqtttest).
# Environment: FUZZTIME (default 10s) per fuzz target.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"

log() { printf '\n==> %s\n' "$*" >&2; }
die() { printf 'test.sh: ERROR: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------
# Cleanup: every server started below registers how to stop it; run in reverse order on exit.
CLEANUPS=()
cleanup() {
	local i
	for ((i = ${#CLEANUPS[@]} - 1; i >= 0; i--)); do
		eval "${CLEANUPS[i]}" || true
	done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Steps: run each, remember how it went, carry on; the summary at the end says what failed.
RESULTS=()
FAILED=0
step() {
	local name="$1" t0=$SECONDS
	shift
	log "$name"
	if "$@"; then
		RESULTS+=("ok    $name ($((SECONDS - t0))s)")
	else
		RESULTS+=("FAIL  $name ($((SECONDS - t0))s)")
		FAILED=1
	fi
}

# port_free PORT: nothing listens on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
random_port() {
	local p
	for _ in $(seq 1 100); do
		p=$((20000 + RANDOM % 30000))
		if port_free "$p"; then
			echo "$p"
			return 0
		fi
	done
	die "no free port found"
}

# ---------------------------------------------------------------------------------------------
# Arguments
if (($# > 0)); then
	GO_TEST_ARGS=("$@")
	VET_PKGS=()
	for a in "$@"; do
		case "$a" in ./* | ../*) VET_PKGS+=("$a") ;; esac
	done
	FUZZ=0
else
	GO_TEST_ARGS=(./...)
	VET_PKGS=(./...)
	FUZZ=1
fi

# ---------------------------------------------------------------------------------------------
# Go
command -v go >/dev/null || die "go is not installed (need the version in go.mod: $(sed -n 's/^go //p' go.mod))"
log "Go modules ($(go version))"
go mod download

# ---------------------------------------------------------------------------------------------
# Server: PostgreSQL — the store and the HTTP server are tested on SQLite AND PostgreSQL.
start_postgres() {
	if [[ -n "${EDGEWAN_TEST_POSTGRES_URL:-}" ]]; then
		log "PostgreSQL: using EDGEWAN_TEST_POSTGRES_URL from the environment"
		return 0
	fi
	log "PostgreSQL"
	bash scripts/postgres.sh install
	PG_DIR="$(mktemp -d "${TMPDIR:-/tmp}/edgewan-testpg-XXXXXX")"
	CLEANUPS+=("bash '$ROOT/scripts/postgres.sh' stop '$PG_DIR'; rm -rf '$PG_DIR'")
	local attempt port out
	for attempt in 1 2 3 4 5; do
		port="$(random_port)"
		if out="$(bash scripts/postgres.sh start "$PG_DIR" "$port")"; then
			EDGEWAN_TEST_POSTGRES_URL="$(tail -n 1 <<<"$out")"
			export EDGEWAN_TEST_POSTGRES_URL
			log "PostgreSQL: EDGEWAN_TEST_POSTGRES_URL=$EDGEWAN_TEST_POSTGRES_URL"
			return 0
		fi
		echo "test.sh: PostgreSQL did not start on port $port (attempt $attempt); retrying on another port" >&2
	done
	die "could not start PostgreSQL (see messages above)"
}
start_postgres

# ---------------------------------------------------------------------------------------------
# Server: Mosquitto — each test starts its own broker with generated password/ACL files
# (controller/mqtt/mqtttest); install it once here so parallel test binaries do not race apt.
log "Mosquitto"
bash scripts/mosquitto.sh install

# NATS server: the scaled-out bus tests start their own 3-node clusters on loopback
# (controller/mqtt/natstest); install it once here.
log "NATS server"
bash scripts/nats.sh install

# History: TestRollingUpgrade (controller/cluster) builds the controller of an older commit from
# the repository's history and upgrades a running cluster from it. A shallow clone lacks that
# commit: deepen it from its origin here (the test fails, naming the commit, if this could not).
if [ "$(git rev-parse --is-shallow-repository 2>/dev/null || echo false)" = true ]; then
	log "Git history (shallow clone: fetching the rest for TestRollingUpgrade)"
	git fetch --quiet --unshallow || printf 'test.sh: warning: git fetch --unshallow failed; TestRollingUpgrade needs the full history\n' >&2
fi

# Headless Chromium: the NOC page's browser test (controller/server/noc_test.go) fails without it.
log "Chromium"
bash scripts/chromium.sh install

# Tesseract and pdftotext: the document capture tests (aigw/document, the gateway) run them for
# real and fail without them.
log "OCR tools"
bash scripts/ocr.sh install

# ---------------------------------------------------------------------------------------------
# Server: InfluxDB 1.8 — built with `go install` (cached in ~/.cache/edgewan/bin), started once
# with Flux on, shared by every test binary through EDGEWAN_TEST_INFLUX_URL (each test makes
# its own database).
start_influxdb() {
	if [[ -n "${EDGEWAN_TEST_INFLUX_URL:-}" ]]; then
		log "InfluxDB: using EDGEWAN_TEST_INFLUX_URL from the environment"
		return 0
	fi
	log "InfluxDB"
	bash scripts/influxdb.sh install >/dev/null
	INFLUX_DIR="$(mktemp -d "${TMPDIR:-/tmp}/edgewan-testinflux-XXXXXX")"
	CLEANUPS+=("bash '$ROOT/scripts/influxdb.sh' stop '$INFLUX_DIR'; rm -rf '$INFLUX_DIR'")
	local attempt port out
	for attempt in 1 2 3; do
		port="$(random_port)"
		if out="$(bash scripts/influxdb.sh start "$INFLUX_DIR" "$port")"; then
			EDGEWAN_TEST_INFLUX_URL="$(tail -n 1 <<<"$out")"
			export EDGEWAN_TEST_INFLUX_URL
			log "InfluxDB: EDGEWAN_TEST_INFLUX_URL=$EDGEWAN_TEST_INFLUX_URL"
			return 0
		fi
		echo "test.sh: InfluxDB did not start on port $port (attempt $attempt); retrying" >&2
	done
	die "could not start InfluxDB (see messages above)"
}
start_influxdb

# ---------------------------------------------------------------------------------------------
# Vet, test, fuzz
if ((${#VET_PKGS[@]} > 0)); then
	step "go vet ${VET_PKGS[*]}" go vet "${VET_PKGS[@]}"
fi

# The abuse and fault suite (controller/abuse) writes its figures here: go test shows nothing of
# a package that passed, and those figures are the point of it.
EDGEWAN_ABUSE_REPORT="$(mktemp "${TMPDIR:-/tmp}/edgewan-abuse-report-XXXXXX")"
export EDGEWAN_ABUSE_REPORT
CLEANUPS+=("rm -f '$EDGEWAN_ABUSE_REPORT'")
step "go test ${GO_TEST_ARGS[*]}" go test -count=1 -timeout 30m "${GO_TEST_ARGS[@]}"
if [[ -s "$EDGEWAN_ABUSE_REPORT" ]]; then
	log "abuse and fault suite"
	cat "$EDGEWAN_ABUSE_REPORT" >&2
fi

# fuzz_one PKG NAME: a short fuzz run. Go 1.26's fuzz coordinator can end a run that found
# nothing with "context deadline exceeded" at the -fuzztime boundary (golang/go#75804, fixed in
# Go 1.27), more often on a loaded machine: two in a row failed CI once. A run that ends so,
# with no "Failing input written" and no new reproducer under testdata/fuzz/NAME, is retried,
# up to 4 attempts; anything else is a real failure.
fuzz_one() {
	local pkg="$1" name="$2" out before after attempt
	for attempt in 1 2 3 4; do
		before="$(ls "$pkg/testdata/fuzz/$name" 2>/dev/null | wc -l)"
		if out="$(go test -run='^$' -fuzz="^${name}\$" -fuzztime="${FUZZTIME:-10s}" "$pkg" 2>&1)"; then
			echo "$out"
			return 0
		fi
		echo "$out"
		after="$(ls "$pkg/testdata/fuzz/$name" 2>/dev/null | wc -l)"
		if [[ "$after" != "$before" ]] || grep -q 'Failing input written' <<<"$out" ||
			! grep -q '^    context deadline exceeded$' <<<"$out"; then
			return 1 # a real failure: a reproducer was written, or another error
		fi
		echo "test.sh: $name hit the fuzz coordinator's deadline race (golang/go#75804) without a reproducer; attempt $attempt" >&2
	done
	return 1
}

if ((FUZZ)); then
	# Every `func FuzzX(f *testing.F)` in a _test.go file, found afresh each run.
	mapfile -t FUZZ_TARGETS < <(
		grep -rEo --include='*_test.go' --exclude-dir=.git --exclude-dir=vendor --exclude-dir=testdata \
			'^func Fuzz[A-Za-z0-9_]*\([A-Za-z0-9_]+ \*testing\.F\)' . | sort || true
	)
	if ((${#FUZZ_TARGETS[@]} == 0)); then
		log "no fuzz targets found"
	fi
	for hit in "${FUZZ_TARGETS[@]}"; do
		file="${hit%%:*}"
		name="${hit#*:func }"
		name="${name%%(*}"
		pkg="$(dirname "$file")"
		step "fuzz $name in $pkg (${FUZZTIME:-10s})" fuzz_one "$pkg" "$name"
	done
fi

# ---------------------------------------------------------------------------------------------
printf '\n==> Summary\n' >&2
printf '    %s\n' "${RESULTS[@]}" >&2
if ((FAILED)); then
	printf 'test.sh: FAILED\n' >&2
	exit 1
fi
printf 'test.sh: all passed\n' >&2
