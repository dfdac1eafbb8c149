#!/usr/bin/env bash
# Controller restarts under continuous reporting, with the real binaries in a network-namespace
# lab (root): the figures of "Controller restarts" in docs/benchmarks.md.
#
#   scripts/bench-restarts.sh               50 restarts (SIGKILL, and SIGTERM every third)
#   RESTARTS=200 scripts/bench-restarts.sh  more
#
# It prints: reports the agent deleted from its spool as stored, windows in the store, lost
# (goal 0), duplicates dropped, transport.down and path.switched raised by the controller and
# path changes the agent applied on its word (goal 0 on healthy links), and the agents'
# reconnect time after the controller is back (median).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
EDGEWAN_E2E_RESTARTS="${RESTARTS:-50}" go test -run '^TestControllerRestarts$' -count=1 -v -timeout 120m ./agent/e2e/ 2>&1 |
	grep -E 'restarts [0-9]+:|^(--- |ok|FAIL)'
