#!/usr/bin/env bash
# AI gateway figures (the gateway acceptance: sanitizing a 4 KB prompt p99 < 2 ms; gateway
# overhead on /chat against a local upstream p50 < 1 ms, p99 < 5 ms; extra time to first token
# from streaming redaction < 50 ms).
#
#   scripts/bench-aigw.sh            everything: in-process benchmarks, then the load run
#   scripts/bench-aigw.sh go         only the Go benchmarks
#   scripts/bench-aigw.sh load       only the load run
#
# go: (1) BenchmarkSanitize4KB (aigw/gateway): the gateway service sanitizing
#     aigw/guard/testdata/prompt_4k.txt under the default policy, audit on SQLite and without a
#     database; p50/p99 of 2,000 timed calls and p99 CPU time.
#     (2) BenchmarkAIGWChatOverhead (controller/server): POST /chat over HTTPS through a real
#     controller to the providertest OpenAI fake on loopback, alternating with the same request
#     sent by the same client straight to the fake; the difference of their percentiles, and the
#     gateway's histogram edgewan_aigw_overhead_seconds over the same requests.
#     (3) BenchmarkAIGWStreamTTFT (controller/server): first SSE delta through the gateway
#     against the first text chunk straight from the fake, with the fake sending everything at
#     once and pacing a word every 2 ms and 10 ms, default window and 64 bytes.
#     (3b) BenchmarkStreamTTFT (aigw/gateway): the same in process, first Delta of
#     Service.ChatStream under the default policy (early emission) and with output.block (the
#     window alone) against a pass-through policy, for 5-byte tokens sent at once and every
#     20 ms, and 6-byte words every 10 ms.
# load: builds the controller, starts it on loopback with a fresh data dir and the built-in
#     echo model (no upstream: what is measured is the gateway), makes a project key, and
#     drives POST /sanitize and POST /chat (4 KB prompt) with wrk over HTTPS at CONNS
#     connections for DURATION each, then reads the overhead histogram from /metrics.
#
# Environment (defaults): COUNT=3 (benchmark repetitions), CONNS=8, DURATION=15s,
#   OUT=/tmp/bench-aigw-run.md (every command and its output is appended there too).
# The machines are shared and noisy: compare figures from one run, quote medians of COUNT.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
what="${1:-all}"
COUNT="${COUNT:-3}"
CONNS="${CONNS:-8}"
DURATION="${DURATION:-15s}"
OUT="${OUT:-/tmp/bench-aigw-run.md}"

log() { printf '\n==> %s\n' "$*" >&2; }

# run prints a command, runs it, and appends both to OUT.
run() {
	printf '\n$ %s\n' "$*" | tee -a "$OUT" >&2
	"$@" 2>&1 | grep -v ' level=' | tee -a "$OUT"
}

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

gobench() {
	log "(1) sanitizing a 4 KB prompt in process (aigw/gateway)"
	run go test -run '^$' -bench '^BenchmarkSanitize4KB$' -benchtime 2000x -benchmem -count "$COUNT" ./aigw/gateway/
	log "(2) gateway overhead on /chat over HTTPS against the OpenAI fake on loopback (controller/server)"
	run go test -run '^$' -bench '^BenchmarkAIGWChatOverhead$' -benchtime 2000x -count "$COUNT" ./controller/server/
	log "(3) extra time to first token from streaming redaction (controller/server)"
	run go test -run '^$' -bench '^BenchmarkAIGWStreamTTFT$' -benchtime 20x -count 1 -timeout 30m ./controller/server/
	log "(3b) the same in process, 5-byte tokens every 20 ms (aigw/gateway)"
	run go test -run '^$' -bench '^BenchmarkStreamTTFT$' -benchtime 20x -count 1 -timeout 30m ./aigw/gateway/
}

# quantiles prints p50 and p99 of a Prometheus histogram from a metrics scrape on stdin.
quantiles() {
	python3 -c '
import re, sys
name = sys.argv[1]
b = {}
for line in sys.stdin:
    m = re.match(name + r"_bucket\{le=\"([^\"]+)\"\} (\S+)", line)
    if m:
        b[float(m.group(1))] = float(m.group(2))
bounds = sorted(b)
total = b[bounds[-1]]
def q(p):
    rank, pb, pc = p * total, 0.0, 0.0
    for x in bounds:
        if b[x] >= rank:
            if x == float("inf") or b[x] == pc:
                return pb if x == float("inf") else x
            return pb + (x - pb) * (rank - pc) / (b[x] - pc)
        pb, pc = x, b[x]
    return pb
print("%s: %d requests, p50 %.0f us, p99 %.0f us (histogram_quantile)" % (name, total, q(0.5) * 1e6, q(0.99) * 1e6))
' "$1"
}

load() {
	command -v wrk >/dev/null || { log "installing wrk"; apt-get install -y wrk >/dev/null; }
	local bin data pid api_port metrics_port mqtt_port token
	bin="$(mktemp -d /tmp/bench-aigw-bin.XXXXXX)"
	data="$(mktemp -d /tmp/bench-aigw-data.XXXXXX)"
	log "building the controller"
	CGO_ENABLED=0 go build -o "$bin/controller" ./controller
	api_port="$(freeport)"
	metrics_port="$(freeport)"
	mqtt_port="$(freeport)"
	token="$("$bin/controller" keys create --data-dir "$data" --project bench --name bench-aigw | tail -n 1)"
	log "starting the controller (data dir $data)"
	"$bin/controller" serve --data-dir "$data" --listen "127.0.0.1:$api_port" --mqtt-listen "127.0.0.1:$mqtt_port" \
		--metrics-listen "127.0.0.1:$metrics_port" --rate-limit 0 --log-level warn >"$data/controller.log" 2>&1 &
	pid=$!
	# shellcheck disable=SC2064 # expand now: these are this run's
	trap "kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf '$bin' '$data'" EXIT
	for _ in $(seq 1 100); do
		if curl -fsS --cacert "$data/tls/ca.crt" "https://127.0.0.1:$api_port/readyz" >/dev/null 2>&1; then break; fi
		kill -0 "$pid" 2>/dev/null || { cat "$data/controller.log" >&2; exit 1; }
		sleep 0.1
	done

	python3 - "$data" <<'EOF'
import json, sys
prompt = open("aigw/guard/testdata/prompt_4k.txt").read()
d = sys.argv[1]
json.dump({"project": "bench", "text": prompt}, open(d + "/sanitize.json", "w"))
json.dump({"project": "bench", "model": "echo", "messages": [{"role": "user", "content": prompt}]}, open(d + "/chat.json", "w"))
EOF
	local path
	for path in sanitize chat; do
		cat >"$data/$path.lua" <<EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $token"
local f = io.open("$data/$path.json")
wrk.body = f:read("*a")
f:close()
function response(status, headers, body)
  if status ~= 200 then io.stderr:write("status " .. status .. ": " .. body .. "\n") end
end
EOF
		log "load: POST /ai-gateway/v1/$path, 4 KB prompt, $CONNS connections for $DURATION"
		curl -fsS "http://127.0.0.1:$metrics_port/metrics" >"$data/before.txt"
		run wrk --latency -t 2 -c "$CONNS" -d "$DURATION" -s "$data/$path.lua" "https://127.0.0.1:$api_port/ai-gateway/v1/$path"
		curl -fsS "http://127.0.0.1:$metrics_port/metrics" >"$data/after.txt"
		# The histogram over this run only: after minus before, bucket by bucket.
		python3 - "$data" <<'EOF' | quantiles edgewan_aigw_overhead_seconds | tee -a "$OUT"
import re, sys
d = sys.argv[1]
def read(f):
    out = {}
    for line in open(f):
        m = re.match(r"(edgewan_aigw_overhead_seconds_bucket\{[^}]*\}) (\S+)", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out
a, b = read(d + "/after.txt"), read(d + "/before.txt")
for k, v in a.items():
    print(k, v - b.get(k, 0))
EOF
	done
	log "controller log (warnings and errors):"
	tail -n 20 "$data/controller.log" >&2 || true
}

printf '# bench-aigw %s on %s (%s)\n' "$(date -u +%FT%TZ)" "$(hostname)" "$(nproc) CPUs" >>"$OUT"
case "$what" in
all) gobench; load ;;
go) gobench ;;
load) load ;;
*) echo "usage: $0 [all|go|load]" >&2; exit 2 ;;
esac
echo "results also in $OUT" >&2
