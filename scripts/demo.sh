#!/usr/bin/env bash
# Runs the controller on embedded defaults (SQLite and a generated CA in ./data), mints an API
# key, shows the API answering over HTTPS, then keeps the controller running until Ctrl-C.
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

echo "==> starting the controller (data in $DATA_DIR, API on $BASE)"
./bin/controller serve --data-dir "$DATA_DIR" --listen "$LISTEN" --allow-http-webhooks "$@" &
CTL=$!
trap 'kill -TERM $CTL 2>/dev/null; wait $CTL 2>/dev/null || true' EXIT INT TERM

CA="$DATA_DIR/tls/ca.crt"
for _ in $(seq 1 100); do
  if [ -f "$CA" ] && curl -sf --cacert "$CA" "$BASE/healthz" >/dev/null 2>&1; then break; fi
  if ! kill -0 $CTL 2>/dev/null; then echo "demo: the controller exited; see its log above" >&2; exit 1; fi
  sleep 0.1
done

echo "==> minting an API key (controller keys create)"
TOKEN=$(./bin/controller keys create --data-dir "$DATA_DIR" --name demo \
  --scopes org:read,devices:read,soc:read,soc:write,webhooks:write,sdwan:read,sdwan:write | tail -n 1)

api() { # api METHOD PATH [JSON]
  local args=(-sS --cacert "$CA" -H "Authorization: Bearer $TOKEN" -X "$1" "$BASE$2")
  [ $# -ge 3 ] && args+=(-H 'Content-Type: application/json' -d "$3")
  echo "\$ curl -X $1 $BASE$2${3:+ -d '$3'}"
  curl "${args[@]}"; echo; echo
}

echo
api GET /v1/ping
api GET /v1/org
api POST /v1/soc/cases '{"title":"Demo: suspicious login at branch 12","severity":"high"}'
api GET '/v1/soc/cases?limit=5'
echo "\$ curl $BASE/v1/org   (no token)"
curl -sS --cacert "$CA" "$BASE/v1/org"; echo; echo

cat <<TXT
The controller is running (pid $CTL). Try it yourself:

  export TOKEN=$TOKEN
  curl --cacert $CA -H "Authorization: Bearer \$TOKEN" $BASE/v1/soc/cases
  curl --cacert $CA $BASE/openapi.json
  curl http://127.0.0.1:9108/metrics

Press Ctrl-C to stop it (it drains requests and webhook queues first).
TXT
wait $CTL
