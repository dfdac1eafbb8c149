#!/usr/bin/env bash
# netlab.sh: a network-namespace lab (a branch site with N WAN transports) for
# trying the agent by hand. Needs root and iproute2. See agent/internal/netlab.
#
#   scripts/netlab.sh up [N]     build a lab with N transports (1..4, default 2), print its
#                                namespaces and addresses, keep it until Ctrl-C, then remove it
#   scripts/netlab.sh down NAME  remove what a crashed or killed run left of lab NAME (ewXXXX)
#   scripts/netlab.sh list       list the labs present on this machine, live or left over
#
# While a lab is up: ip netns exec NAME-br ping -I NAME-t1 198.18.1.1 (apt-get install -y iputils-ping)
set -euo pipefail
cd "$(dirname "$0")/.."

# A built binary, not go run: signals (Ctrl-C, kill) reach the lab's process itself.
netlab() {
	local bin=${TMPDIR:-/tmp}/edgewan-netlab
	go build -o "$bin" ./agent/internal/netlab/cmd/netlab
	exec "$bin" "$@"
}

cmd=${1:-}
case "$cmd" in
up)
	netlab up -transports "${2:-2}"
	;;
down)
	[ $# -eq 2 ] || { echo "usage: $0 down NAME" >&2; exit 2; }
	netlab down "$2"
	;;
list)
	netlab list
	;;
*)
	sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
