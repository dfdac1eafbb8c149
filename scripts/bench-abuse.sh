#!/usr/bin/env bash
# The abuse and fault suite (controller/abuse), long version: the same tests as in CI with
# longer outages and more kills, printing every figure (docs/benchmarks.md, "Abuse and faults").
#
#   scripts/bench-abuse.sh [extra go test flags, e.g. -run TestFaults]
#
# Needs root (the disk-full fault mounts a tmpfs), PostgreSQL, InfluxDB and Mosquitto installed
# (scripts/postgres.sh, scripts/influxdb.sh, scripts/mosquitto.sh install them); each fault
# starts servers of its own, so the shared ones are never stopped. Scale with:
#   EDGEWAN_ABUSE_KILLS              SIGKILLs at random moments   (CI 5,   here 50)
#   EDGEWAN_ABUSE_DATABASE_DOWN_FOR  PostgreSQL stopped            (CI 30s, here 5m)
#   EDGEWAN_ABUSE_INFLUXDB_DOWN_FOR  InfluxDB stopped              (CI 60s, here 10m)
#   EDGEWAN_ABUSE_MOSQUITTO_DOWN_FOR Mosquitto stopped             (CI 10s, here 2m)
#   EDGEWAN_ABUSE_DISK_FULL_FOR      data dir full                 (CI 5s,  here 2m)
# About 11 minutes (the InfluxDB outage; the faults run in parallel).
set -euo pipefail
cd "$(dirname "$0")/.."
export EDGEWAN_ABUSE_KILLS="${EDGEWAN_ABUSE_KILLS:-50}"
export EDGEWAN_ABUSE_DATABASE_DOWN_FOR="${EDGEWAN_ABUSE_DATABASE_DOWN_FOR:-5m}"
export EDGEWAN_ABUSE_INFLUXDB_DOWN_FOR="${EDGEWAN_ABUSE_INFLUXDB_DOWN_FOR:-10m}"
export EDGEWAN_ABUSE_MOSQUITTO_DOWN_FOR="${EDGEWAN_ABUSE_MOSQUITTO_DOWN_FOR:-2m}"
export EDGEWAN_ABUSE_DISK_FULL_FOR="${EDGEWAN_ABUSE_DISK_FULL_FOR:-2m}"
bash scripts/postgres.sh install
bash scripts/mosquitto.sh install
bash scripts/influxdb.sh install >/dev/null
exec go test -count=1 -timeout 60m -v "$@" ./controller/abuse/
