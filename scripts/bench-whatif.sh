#!/usr/bin/env bash
# The what-if (policy simulation) and NOC figures of docs/benchmarks.md.
#
#   scripts/bench-whatif.sh [extra go test flags]
#
# 1. controller/whatif: one site-day replayed under two policies (BenchmarkSite), the synthetic
#    history alone (BenchmarkGenerate), one site-day read from a real embedded store and
#    replayed (BenchmarkEmbeddedSite), and the goal, 10,000 sites x 24 h replayed on GOMAXPROCS
#    workers (BenchmarkFleet10k, once: about 10 s on 2 cores).
# 2. TestNOCFleet: the NOC page in headless Chromium at 1280 px over 10,000 sites; it logs the
#    time to the first page and each live update's main-thread time, and writes them with a
#    screenshot to $EDGEWAN_TEST_ARTIFACTS (default /tmp/edgewan-test-artifacts).
# The machines are shared and noisy: quote medians of runs, and the load they ran under.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench 'BenchmarkSite|BenchmarkGenerate|BenchmarkEmbeddedSite' -benchmem "$@" ./controller/whatif/
go test -run '^$' -bench 'BenchmarkFleet10k' -benchtime 1x -timeout 10m "$@" ./controller/whatif/
go test -count=1 -run '^TestNOCFleet$' -v -timeout 10m "$@" ./controller/server/ | grep -E 'noc_fleet_test|^(ok|FAIL|---)'
