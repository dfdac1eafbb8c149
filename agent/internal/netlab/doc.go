// Package netlab builds a branch site with several WAN transports on one
// machine out of network namespaces, for the agent's end-to-end tests and
// benchmarks.
//
// A lab called NAME (random, "ew" + 4 hex digits) holds:
//
//	root ns      NAME-m   198.18.250.x+1/30  ── management veth ──  NAME-mb  198.18.250.x+2/30   NAME-br (branch)
//	NAME-br      NAME-tI  198.18.I.2/24      ── transport I veth ── NAME-gI  198.18.I.1/24       NAME-wI (WAN I)
//	NAME-wI      lo       198.18.100.1/32 (the probe target, the same in every WAN namespace)
//
// The controller listens in the root namespace on MgmtRootIP; the agent runs
// in the branch namespace (ip netns exec NAME-br ...). The branch main table
// holds only connected routes, so the probe target is reachable only through
// per-transport tables and rules that the agent installs. Each WAN namespace
// ignores pings in the kernel (icmp_echo_ignore_all=1) and answers them with
// a Responder instead, whose delay, jitter and loss are set at run time
// (netem is not available); WAN.SetLink takes a transport down or up.
//
// Tests call New, which fails the test with the reason when the lab cannot
// be built (see Available) and removes everything when the test ends.
//
// For humans, scripts/netlab.sh wraps cmd/netlab:
//
//	scripts/netlab.sh up [N]    # build a lab with N transports (default 2), print it, wait for Ctrl-C, remove it
//	scripts/netlab.sh down NAME # remove what a crashed run left of lab NAME
//	scripts/netlab.sh list      # list labs present on this machine (live or left over)
package netlab
