#!/usr/bin/env bash
# List latency of the core API with 100,000 rows, on SQLite and PostgreSQL: the acceptance figure
# "list latency p50/p99 with 100k rows" (docs/benchmarks.md).
#
#   scripts/bench-list.sh [extra go test flags, e.g. -count 3]
#
# Runs BenchmarkListCases (controller/server/list_bench_test.go): a real controller over HTTPS on
# loopback, 100k SOC cases seeded once per backend (not timed), then GET /v1/soc/cases in several
# shapes (first page, deep pages via cursor, filtered, ascending with since), 1000 requests each,
# one request per benchmark iteration. Per shape it prints p50-us and p99-us (per-request
# latency in microseconds; ns/op is the mean) and logs the query plans of both backends.
# PostgreSQL: a throwaway server started by the test (scripts/postgres.sh), or the one at
# EDGEWAN_TEST_POSTGRES_URL. About 1-2 minutes per backend on 2 cores.
# The machines are shared and noisy: compare shapes within one run, quote medians of runs.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go test -run '^$' -bench '^BenchmarkListCases$' -benchtime 1000x -timeout 20m -v "$@" ./controller/server/
