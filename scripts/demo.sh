#!/usr/bin/env bash
# Runs the controller on embedded defaults (SQLite, embedded MQTT broker, embedded time-series
# store and a generated CA in ./data) with two simulated branch agents that claim their sites and
# report telemetry, shows the API answering over HTTPS, then keeps running until Ctrl-C.
# Usage: scripts/demo.sh [extra controller serve flags]
set -euo pipefail
cd "$(dirname "$0")/.."

DATA_DIR=${DATA_DIR:-./data}
LISTEN=${LISTEN:-127.0.0.1:8443}
BASE="https://${LISTEN}"

if ! command -v curl >/dev/null; then
  echo "demo: installing curl" >&2
  apt-get update -qq && apt-get install -y -qq curl >/dev/null
fi

echo "==> building bin/controller and bin/agent"
mkdir -p bin
VERSION=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
go build -ldflags "-X github.com/edgewan/edgewan/controller/server.Version=$VERSION" -o bin/controller ./controller
go build -ldflags "-X main.Version=$VERSION" -o bin/agent ./agent
go build -o bin/simagent ./scripts/simagent

# A port already taken (by an earlier demo, or anything else) would make the controller exit,
# or worse, answer the readiness check in its place: say so before starting.
port_taken() { # port_taken HOST:PORT
  (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null
}
for addr in "$LISTEN" "${MQTT_LISTEN:-127.0.0.1:8883}"; do
  if port_taken "$addr"; then
    echo "demo: $addr is already in use by another program (an earlier demo still running?)." >&2
    echo "demo: stop it, or pick other ports: LISTEN=127.0.0.1:9443 MQTT_LISTEN=127.0.0.1:9883 scripts/demo.sh" >&2
    exit 1
  fi
done

echo "==> starting the controller (data in $DATA_DIR, API on $BASE)"
./bin/controller serve --data-dir "$DATA_DIR" --listen "$LISTEN" --mqtt-listen "${MQTT_LISTEN:-127.0.0.1:8883}" --allow-http-webhooks "$@" &
CTL=$!
SIM=
# stop ends the simulated agents and the controller, waiting for the controller to drain.
stop() {
  if [ -n "$SIM" ]; then kill -TERM "$SIM" 2>/dev/null || true; wait "$SIM" 2>/dev/null || true; SIM=; fi
  if [ -n "$CTL" ]; then kill -TERM "$CTL" 2>/dev/null || true; wait "$CTL" 2>/dev/null || true; CTL=; fi
}
trap stop EXIT
# Ctrl-C (or SIGTERM) is the normal way to end the demo: a clean stop, exit status 0.
trap 'trap - INT TERM; echo; echo "==> stopping (the controller drains requests and webhook queues first)"; stop; exit 0' INT TERM

# Readiness: every probe is bounded (something else may accept connections and never answer),
# and so is the whole wait.
CA="$DATA_DIR/tls/ca.crt"
READY_TIMEOUT=${READY_TIMEOUT:-60}
deadline=$((SECONDS + READY_TIMEOUT))
until [ -f "$CA" ] && curl -sf --connect-timeout 2 --max-time 5 --cacert "$CA" "$BASE/healthz" >/dev/null 2>&1; do
  if ! kill -0 "$CTL" 2>/dev/null; then
    CTL=
    echo "demo: the controller exited; see its log above" >&2
    exit 1
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "demo: the controller did not answer $BASE/healthz within ${READY_TIMEOUT}s; see its log above (is another program on $LISTEN?)" >&2
    exit 1
  fi
  sleep 0.2
done

echo "==> minting an API key (controller keys create)"
TOKEN=$(./bin/controller keys create --data-dir "$DATA_DIR" --name demo \
  --scopes org:read,devices:read,soc:read,soc:write,webhooks:write,sdwan:read,sdwan:write | tail -n 1)

api() { # api METHOD PATH [JSON]
  local args=(-sS --max-time 10 --cacert "$CA" -H "Authorization: Bearer $TOKEN" -X "$1" "$BASE$2")
  [ $# -ge 3 ] && args+=(-H 'Content-Type: application/json' -d "$3")
  echo "\$ curl -X $1 $BASE$2${3:+ -d '$3'}"
  curl "${args[@]}"; echo; echo
}

echo "==> starting two simulated branch agents (scripts/simagent): pre-stage, claim, report"
./bin/simagent --api "$BASE" --ca "$CA" --token "$TOKEN" --sites 2 > "$DATA_DIR/simagent.log" 2>&1 &
SIM=$!
for _ in $(seq 1 100); do
  [ "$(grep -c claimed "$DATA_DIR/simagent.log" 2>/dev/null)" -ge 2 ] && break
  kill -0 $SIM 2>/dev/null || { cat "$DATA_DIR/simagent.log"; echo "demo: simagent exited" >&2; exit 1; }
  sleep 0.1
done
sleep 5 # let a few seconds of telemetry arrive

SITE=$(curl -sS --max-time 10 --cacert "$CA" -H "Authorization: Bearer $TOKEN" "$BASE/sd-wan/v1/sites?limit=1" | sed -n 's/.*"id":"\(site_[a-z0-9]*\)".*/\1/p' | head -n 1)
echo
api GET /v1/ping
api GET /v1/org
api GET '/sd-wan/v1/sites?limit=2'
api GET "/sd-wan/v1/sites/$SITE/health?window=5m"
api GET /v1/devices
api POST /v1/soc/cases '{"title":"Demo: suspicious login at branch 12","severity":"high"}'
echo "\$ curl $BASE/v1/org   (no token)"
curl -sS --max-time 10 --cacert "$CA" "$BASE/v1/org"; echo; echo

cat <<TXT
The controller is running (pid $CTL). Try it yourself:

  export TOKEN=$TOKEN
  curl --cacert $CA -H "Authorization: Bearer \$TOKEN" $BASE/sd-wan/v1/sites/$SITE/health?window=1m
  curl --cacert $CA -H "Authorization: Bearer \$TOKEN" $BASE/v1/soc/cases
  curl --cacert $CA $BASE/openapi.json
  curl http://127.0.0.1:9108/metrics

The NOC page: open $BASE/noc (trust $CA, or accept the certificate) and sign in with the
token above (it has sdwan:read); it follows the two simulated sites live.

Press Ctrl-C to stop it (it drains requests and webhook queues first).
TXT
rc=0
wait "$CTL" || rc=$? # returns early on Ctrl-C: the trap above stops everything and exits 0
CTL=
exit "$rc"
