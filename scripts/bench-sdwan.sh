#!/usr/bin/env bash
# SD-WAN ingest and health figures (the SD-WAN controller acceptance: 10,000 sites x 3 transports
# reporting every second = 30k samples/s, p99 evaluation lag under 1 s, health p99 under 10 ms
# with 10k sites, memory per site).
#
#   scripts/bench-sdwan.sh                 everything: in-process benchmarks, then end to end
#   scripts/bench-sdwan.sh e2e             only the end-to-end run
#   scripts/bench-sdwan.sh go              only the in-process benchmarks
#
# End to end: builds the controller and scripts/loadgen, starts the controller on loopback with
# a fresh data dir (embedded broker, SQLite, embedded time-series store; --rate-limit 0 so that
# staging 10k sites is not throttled), creates an API key, then loadgen pre-stages and claims
# SITES sites through the API, connects CONNS agents over MQTT/TLS (one site each), publishes
# RATE reports/s per agent for DURATION, while a second loadgen process (--health-only) probes
# the health endpoint of random sites, and prints the table (also written as markdown to OUT).
# The controller is stopped at the end.
#
# Environment (defaults):
#   SITES=10000 CONNS=$SITES RATE=1 DURATION=80s WARMUP=20s HEALTH=2000
#   OUT=/tmp/bench-sdwan-e2e.md   KEEP=1 keeps the data dir and loadgen state for a re-run
#   DATA=dir                       reuse a data dir (with its loadgen-state.json: no re-staging;
#                                  the controller then starts with every site offline, and the
#                                  first reports are a status storm: WARMUP covers it)
#   LOADGEN_FLAGS=...              more loadgen flags (go run ./scripts/loadgen -h)
# The first WARMUP of the run is not measured: every site's first report changes its status.
# The machines are shared and noisy: quote medians of several runs. The table's CPU row says how
# much of the 2 cores the controller, the load generator and the whole machine took, and its
# hiccups row how long a runnable goroutine waited for a CPU: figures taken while the machine
# was saturated by other jobs say little about the controller.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
what="${1:-all}"

SITES="${SITES:-10000}"
CONNS="${CONNS:-$SITES}"
RATE="${RATE:-1}"
DURATION="${DURATION:-80s}"
WARMUP="${WARMUP:-20s}"
HEALTH="${HEALTH:-2000}"
OUT="${OUT:-/tmp/bench-sdwan-e2e.md}"

log() { printf '\n==> %s\n' "$*" >&2; }

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

gobench() {
	log "in-process: ingest hot path, 10k sites x 3 transports (controller/ingest/bench_test.go)"
	go test -run '^$' -bench '^BenchmarkIngest$' -benchtime 100000x -benchmem -count "${COUNT:-3}" -timeout 30m ./controller/ingest/
	go test -run '^$' -bench '^(BenchmarkIngestMemory|BenchmarkIngestFirstReports)$' -benchtime 1x -count 1 -timeout 20m ./controller/ingest/
	log "in-process: health endpoint over HTTPS with 10k sites (controller/server/sdwan_bench_test.go)"
	go test -run '^$' -bench '^BenchmarkSiteHealth$' -benchtime 3000x -count "${COUNT:-3}" -timeout 30m ./controller/server/
}

e2e() {
	local bin data pid
	bin="$(mktemp -d /tmp/bench-sdwan-bin.XXXXXX)"
	log "building the controller and loadgen"
	CGO_ENABLED=0 go build -o "$bin/controller" ./controller
	CGO_ENABLED=0 go build -o "$bin/loadgen" ./scripts/loadgen
	if [[ -n "${DATA:-}" ]]; then
		data="$DATA"
		mkdir -p "$data"
	else
		data="$(mktemp -d /tmp/bench-sdwan-data.XXXXXX)"
	fi
	local api_port mqtt_port metrics_port
	api_port="$(freeport)"
	mqtt_port="$(freeport)"
	metrics_port="$(freeport)"
	local token
	token="$("$bin/controller" keys create --data-dir "$data" --scopes sdwan:read,sdwan:write --name bench-sdwan | tail -n 1)"

	log "starting the controller (data dir $data)"
	"$bin/controller" serve --data-dir "$data" --listen "127.0.0.1:$api_port" --mqtt-listen "127.0.0.1:$mqtt_port" \
		--metrics-listen "127.0.0.1:$metrics_port" --rate-limit 0 --log-level warn >"$data/controller.log" 2>&1 &
	pid=$!
	# shellcheck disable=SC2064 # expand now: these are this run's
	trap "kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf '$bin'; [[ -n '${KEEP:-}${DATA:-}' ]] || rm -rf '$data'" EXIT
	for _ in $(seq 1 100); do
		if curl -fsS --cacert "$data/tls/ca.crt" "https://127.0.0.1:$api_port/readyz" >/dev/null 2>&1; then break; fi
		kill -0 "$pid" 2>/dev/null || { cat "$data/controller.log" >&2; exit 1; }
		sleep 0.1
	done

	log "loadgen: $SITES sites, $CONNS agents x $RATE reports/s for $DURATION; health probes from a second process"
	local lg_log="$data/loadgen.log" hp_out="${OUT%.md}-health.md"
	set -x
	"$bin/loadgen" --api "https://127.0.0.1:$api_port" --ca "$data/tls/ca.crt" --token "$token" \
		--metrics "http://127.0.0.1:$metrics_port/metrics" --mqtt "127.0.0.1:$mqtt_port" --pid "$pid" --state "$data/loadgen-state.json" \
		--sites "$SITES" --conns "$CONNS" --rate "$RATE" --duration "$DURATION" --warmup "$WARMUP" \
		--health-requests 0 --out "$OUT" ${LOADGEN_FLAGS:-} >"$lg_log" 2>&1 &
	{ set +x; } 2>/dev/null
	local lg=$!
	# The health prober is a process of its own: probing from the publishing loader would add
	# its scheduling delays (10k agents' goroutines) to every request's latency.
	for _ in $(seq 1 3600); do # until publishing starts (staging and connecting come first), at most 30 min
		grep -q "publishing:" "$lg_log" && break
		kill -0 "$lg" 2>/dev/null || break
		sleep 0.5
	done
	local hp=""
	if grep -q "publishing:" "$lg_log" && [[ "$HEALTH" != 0 ]]; then
		set -x
		"$bin/loadgen" --health-only --api "https://127.0.0.1:$api_port" --ca "$data/tls/ca.crt" --token "$token" \
			--metrics "http://127.0.0.1:$metrics_port/metrics" --state "$data/loadgen-state.json" --sites "$SITES" \
			--duration "$DURATION" --warmup "$WARMUP" --health-requests "$HEALTH" --out "$hp_out" >"$data/health.log" 2>&1 &
		{ set +x; } 2>/dev/null
		hp=$!
	fi
	local rc=0
	wait "$lg" || rc=$?
	[[ -z "$hp" ]] || wait "$hp" || rc=$?
	cat "$lg_log"
	[[ -z "$hp" ]] || { cat "$data/health.log"; tail -n +3 "$hp_out" >>"$OUT"; }
	log "controller log (warnings and errors):"
	tail -n 20 "$data/controller.log" >&2 || true
	echo "results also in $OUT" >&2
	return "$rc"
}

case "$what" in
all) gobench; e2e ;;
go) gobench ;;
e2e) e2e ;;
*) echo "usage: $0 [all|go|e2e]" >&2; exit 2 ;;
esac
