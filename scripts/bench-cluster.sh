#!/usr/bin/env bash
# Controller CPU per 1,000 samples/s with 1, 2 and 3 `controller serve` processes sharing the
# load in the scaled-out mode (3 NATS nodes from scripts/nats.sh, PostgreSQL, InfluxDB): the
# figures of "Scaled-out cluster" in docs/benchmarks.md. The figure must stay flat as
# controllers are added (no per-report chatter between them).
#
#   scripts/bench-cluster.sh                       300 sites, 1 report/s, 3 transports (900 samples/s), 30 s per step
#   SITES=1000 STEP_SECONDS=60 scripts/bench-cluster.sh   more load, longer steps
#   EDGEWAN_BENCH_PROFILE=/tmp/prof SITES=1000 scripts/bench-cluster.sh
#       also a CPU profile of each controller per window (--pprof): /tmp/prof/{N}ctl-{idle,load}-{id}.pprof
#
# Diagnostics of the rise from 1 to 3 controllers (docs/benchmarks.md, "the 1 -> 3 rise"):
#   EQUAL=1 SITES=1000 scripts/bench-cluster.sh        equal load per controller: with n controllers
#       only n/3 of the sites report (1 controller at R, 3 at R each): does a controller's CPU per
#       report change when it has peers?
#   GOMAXPROCS_CTL=1 SITES=1000 scripts/bench-cluster.sh   the controllers run with GOMAXPROCS=1
#       (a diagnostic, not a default: idle Ps' spinning on a box the controllers share)
#   READ_COALESCE=0 SITES=1000 scripts/bench-cluster.sh   the controllers with --nats-read-coalesce 0
#       (off; unset: the default), for A/B runs (docs/benchmarks.md, "Read coalescing")
#
# PostgreSQL and InfluxDB: EDGEWAN_TEST_POSTGRES_URL and EDGEWAN_TEST_INFLUX_URL if set, else
# the test helpers start their own (scripts/postgres.sh, scripts/influxdb.sh).
# CPU is utime + stime from /proc/<pid>/stat of the controller processes only.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
EDGEWAN_BENCH_SITES="${SITES:-300}" EDGEWAN_BENCH_SECONDS="${STEP_SECONDS:-30}" \
	EDGEWAN_BENCH_EQUAL="${EQUAL:-}" EDGEWAN_BENCH_GOMAXPROCS="${GOMAXPROCS_CTL:-}" \
	EDGEWAN_BENCH_READ_COALESCE="${READ_COALESCE:-}" \
	go test -run '^$' -bench '^BenchmarkClusterCPU$' -benchtime 1x -count=1 -timeout 60m ./controller/cluster/ 2>&1 |
	grep -E 'controller\(s\)|level=WARN|^Benchmark|^(ok|FAIL|PASS)'
