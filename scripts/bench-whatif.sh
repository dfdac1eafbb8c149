#!/usr/bin/env bash
# The what-if (policy simulation) and NOC figures of docs/benchmarks.md, in one run:
#
#   scripts/bench-whatif.sh            # everything (about 10 minutes on 2 idle cores)
#   scripts/bench-whatif.sh fleet      # only the goal: 10,000 sites x 24 h through the route
#
# 1. telemetry/sink: one site-day read from the embedded store's hour blocks and from minute rows
#    (BenchmarkMinutesDay), and the rate of compacting minute rows into blocks (BenchmarkCompact).
# 2. controller/whatif: one site-day replayed under two policies (BenchmarkSite), the synthetic
#    history alone (BenchmarkGenerate), one site-day read from a real embedded store and
#    replayed (BenchmarkEmbeddedSite: read, read+replay), and the replay alone over 10,000
#    site-days on GOMAXPROCS workers (BenchmarkFleet10k).
# 3. controller/server BenchmarkSimulateFleet, the goal end to end: POST .../simulate over 10,000
#    sites x 24 h in the embedded store through the real route, the streamed answer read to its
#    end; it reports s/simulation (wall), cpu_s/simulation (the process's CPU time: on 2 idle
#    cores the wall time is about half of it) and peak_rss_MB. Building its fixture takes a few
#    minutes (100 site-days through the sink, copied to 10,000 sites); EDGEWAN_BENCH_SITES
#    makes the fleet smaller.
# 4. TestNOCFleet: the NOC page in headless Chromium at 1280 px over 10,000 sites; it logs the
#    time to the first page and each live update's main-thread time, and writes them with a
#    screenshot to $EDGEWAN_TEST_ARTIFACTS (default /tmp/edgewan-test-artifacts).
# Extra arguments after the optional "fleet" go to every go test. The machines are shared and
# noisy: quote medians of runs, and the load they ran under (printed first).
set -euo pipefail
cd "$(dirname "$0")/.."
only=""
if [[ "${1:-}" == fleet ]]; then
	only=fleet
	shift
fi
uptime
if [[ -z "$only" ]]; then
	go test -run '^$' -bench 'BenchmarkMinutesDay|BenchmarkCompact' -benchmem "$@" ./telemetry/sink/
	go test -run '^$' -bench 'BenchmarkSite|BenchmarkGenerate|BenchmarkEmbeddedSite' -benchmem "$@" ./controller/whatif/
	go test -run '^$' -bench 'BenchmarkFleet10k' -benchtime 1x -timeout 10m "$@" ./controller/whatif/
fi
go test -run '^$' -bench 'BenchmarkSimulateFleet' -benchtime 1x -timeout 60m "$@" ./controller/server/
if [[ -z "$only" ]]; then
	go test -count=1 -run '^TestNOCFleet$' -v -timeout 10m "$@" ./controller/server/ | grep -E 'noc_fleet_test|^(ok|FAIL|---)'
fi
uptime
