#!/usr/bin/env bash
# Fleet reconnect after a controller restart (issue 13, "Reconnect"): the figures of
# "Reconnect rate at 10,000 agents" in docs/benchmarks.md.
#
#   scripts/bench-reconnect.sh                    10,000 agents, SIGKILL, 10 s outage
#   AGENTS=2000 SIGNAL=TERM OUTAGE=3s scripts/bench-reconnect.sh
#   PROFILE=/tmp/prof GCTRACE=1 scripts/bench-reconnect.sh
#                                                 also the restarted controller's CPU profile (12 s
#                                                 from its start), goroutine/block/mutex profiles
#                                                 2 s after ready, and GODEBUG=gctrace=1 in its log
#   PROFILE=/tmp/prof TRACE=10s scripts/bench-reconnect.sh
#                                                 also runtime execution traces of the restarted
#                                                 controller (trace.out) and of loadgen (loadgen-trace.out),
#                                                 10 s from ready: go tool trace /tmp/prof/trace.out
#   CONTROLLER=/path/to/controller scripts/bench-reconnect.sh
#                                                 that controller binary instead of building one
#                                                 (paired A/B runs of two trees)
#
# Builds the controller and scripts/loadgen, creates an API key in a fresh data dir, and runs
# loadgen --reconnect, which starts the controller itself on loopback (embedded broker, SQLite,
# embedded time-series store), pre-stages and claims AGENTS sites, connects one MQTT/TLS agent
# per site, stops the controller with SIGNAL, starts it again OUTAGE later and measures how the
# agents, each on the agent's own full-jitter backoff (agent/backoff), come back: attempts and
# reconnects per second per 100 ms bucket, controller-ready -> reconnected median and p95, and
# failures. Each agent holds one file descriptor in loadgen and one in the controller: the hard
# RLIMIT_NOFILE (ulimit -Hn) must exceed AGENTS + a few hundred for both (loadgen says so).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

AGENTS="${AGENTS:-10000}"
SIGNAL="${SIGNAL:-KILL}"
OUTAGE="${OUTAGE:-10s}"
OUT="${OUT:-/tmp/bench-reconnect.md}"

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

bin="$(mktemp -d /tmp/bench-reconnect-bin.XXXXXX)"
data="$(mktemp -d /tmp/bench-reconnect-data.XXXXXX)"
# shellcheck disable=SC2064 # expand now: these are this run's
trap "rm -rf '$bin'; [[ -n '${KEEP:-}' ]] || rm -rf '$data'" EXIT
echo "==> building the controller and loadgen" >&2
if [[ -n "${CONTROLLER:-}" ]]; then
	cp "$CONTROLLER" "$bin/controller"
else
	CGO_ENABLED=0 go build -o "$bin/controller" ./controller
fi
CGO_ENABLED=0 go build -o "$bin/loadgen" ./scripts/loadgen
api_port="$(freeport)"
mqtt_port="$(freeport)"
metrics_port="$(freeport)"
token="$("$bin/controller" keys create --data-dir "$data" --scopes sdwan:read,sdwan:write --name bench-reconnect | tail -n 1)"
ctl=("$bin/controller")
extra=()
if [[ -n "${GCTRACE:-}" ]]; then
	ctl=(env GODEBUG=gctrace=1 "$bin/controller") # the controller's only, not loadgen's
fi
if [[ -n "${PROFILE:-}" ]]; then
	extra=(--profile-dir "$PROFILE")
	if [[ -n "${TRACE:-}" ]]; then
		extra+=(--trace-for "$TRACE")
	fi
elif [[ -n "${TRACE:-}" ]]; then
	echo "TRACE needs PROFILE (the directory the trace goes to)" >&2
	exit 2
fi
set -x
"$bin/loadgen" --reconnect --api "https://127.0.0.1:$api_port" --ca "$data/tls/ca.crt" --token "$token" \
	--controller-cmd "${ctl[*]} serve --data-dir $data --listen 127.0.0.1:$api_port --mqtt-listen 127.0.0.1:$mqtt_port --metrics-listen 127.0.0.1:$metrics_port --rate-limit 0 --log-level warn${PROFILE:+ --pprof}" \
	--controller-log "$data/controller.log" --metrics "http://127.0.0.1:$metrics_port/metrics" --mqtt "127.0.0.1:$mqtt_port" --state "$data/loadgen-state.json" \
	--sites "$AGENTS" --kill-signal "$SIGNAL" --outage "$OUTAGE" --out "$OUT" "${extra[@]}" ${LOADGEN_FLAGS:-}
{ set +x; } 2>/dev/null
if [[ -n "${GCTRACE:-}" ]]; then
	cp "$data/controller.log" "${OUT%.md}-controller.log" # the gc trace lines
	echo "controller log (gc trace) in ${OUT%.md}-controller.log" >&2
fi
echo "results also in $OUT" >&2
