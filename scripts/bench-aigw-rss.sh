#!/usr/bin/env bash
# The AI gateway under sustained adversarial load: the controller's resident memory while
# clients send 512 KiB texts made of nothing but e-mail addresses ("a@b.co a@b.co ..."), the
# worst case for redaction (one entity every 7 bytes). The project's policy lifts the input
# limit (max_input_bytes 0), so every byte is read, scanned and redacted; the default policy
# would refuse such texts unread.
#
#   scripts/bench-aigw-rss.sh           CONNS=16 clients, 200 requests per phase
#   CONNS=32 REQS=400 scripts/bench-aigw-rss.sh
#
# Phases: POST /sanitize, POST /chat with the built-in echo model (the answer is scanned as
# well), and the same chat streamed. Then GET /logs?limit=200 (pages bounded in bytes).
# It prints each phase's status counts and wall time, and the controller's peak RSS (VmHWM)
# and current RSS after each phase, from /proc. Goal (issue 11): RSS < 300 MB throughout.
# Environment (defaults): CONNS=16, REQS=200, OUT=/tmp/bench-aigw-rss.md (appended to).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CONNS="${CONNS:-16}"
REQS="${REQS:-200}"
OUT="${OUT:-/tmp/bench-aigw-rss.md}"

log() { printf '%s\n' "$*" | tee -a "$OUT" >&2; }
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

bin="$(mktemp -d /tmp/bench-aigw-rss-bin.XXXXXX)"
data="$(mktemp -d /tmp/bench-aigw-rss-data.XXXXXX)"
CGO_ENABLED=0 go build -o "$bin/controller" ./controller
api_port="$(freeport)"
token="$("$bin/controller" keys create --data-dir "$data" --project bench --scopes aigw:admin --name bench-rss | tail -n 1)"
"$bin/controller" serve --data-dir "$data" --listen "127.0.0.1:$api_port" --mqtt-listen "127.0.0.1:$(freeport)" \
	--rate-limit 0 --log-level warn >"$data/controller.log" 2>&1 &
pid=$!
# shellcheck disable=SC2064 # expand now: these are this run's
trap "kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf '$bin' '$data'" EXIT
base="https://127.0.0.1:$api_port/ai-gateway/v1"
for _ in $(seq 1 100); do
	if curl -fsS --cacert "$data/tls/ca.crt" "https://127.0.0.1:$api_port/readyz" >/dev/null 2>&1; then break; fi
	kill -0 "$pid" 2>/dev/null || { cat "$data/controller.log" >&2; exit 1; }
	sleep 0.1
done
api() { curl -sS --cacert "$data/tls/ca.crt" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$@"; }

# A policy with no input limit, published.
pol="$(api -X POST "$base/policies" -d '{"name":"no limit","content":{"block":{"max_input_bytes":0}}}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')"
api -X POST "$base/policies/$pol/publish" -d '{"version":1}' >/dev/null

python3 - "$data" <<'PY'
import json, sys
d = sys.argv[1]
text = ("a@b.co " * (512 * 1024 // 7 + 1))[: 512 * 1024 - 8]
json.dump({"project": "bench", "text": text}, open(d + "/sanitize.json", "w"))
json.dump({"project": "bench", "model": "echo", "messages": [{"role": "user", "content": text}]}, open(d + "/chat.json", "w"))
json.dump({"project": "bench", "model": "echo", "stream": True, "messages": [{"role": "user", "content": text}]}, open(d + "/stream.json", "w"))
PY

rss() { awk '/^VmHWM|^VmRSS/ { printf "%s %d MB  ", $1, $2 / 1024 }' "/proc/$pid/status"; echo; }

printf '\n# bench-aigw-rss %s on %s (%s CPUs), CONNS=%s REQS=%s\n' "$(date -u +%FT%TZ)" "$(hostname)" "$(nproc)" "$CONNS" "$REQS" >>"$OUT"
log "idle: $(rss)"
for phase in sanitize chat stream; do
	path="$phase"
	[ "$phase" = stream ] && path=chat
	start="$(date +%s.%N)"
	codes="$(seq 1 "$REQS" | xargs -P "$CONNS" -I{} curl -sS -o /dev/null -w '%{http_code}\n' --cacert "$data/tls/ca.crt" \
		-H "Authorization: Bearer $token" -H 'Content-Type: application/json' --data-binary "@$data/$phase.json" "$base/$path" |
		sort | uniq -c | tr '\n' ' ')"
	secs="$(echo "$(date +%s.%N) - $start" | bc)"
	log "$phase: $REQS x 512 KiB at $CONNS clients in ${secs}s, statuses: $codes| $(rss)"
done
bytes="$(api -o /dev/null -w '%{size_download}' "$base/logs?limit=200")"
log "GET /logs?limit=200: $bytes bytes | $(rss)"
grep -iE 'level=(error|warn)' "$data/controller.log" | tail -n 5 >&2 || true
