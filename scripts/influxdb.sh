#!/usr/bin/env bash
# Throwaway InfluxDB 1.8 servers for tests.
#
#   scripts/influxdb.sh start DIR PORT   start influxd with its data in DIR on 127.0.0.1:PORT
#                                        (HTTP API, Flux on), installing influxd first if
#                                        missing; wait until it answers /ping and print its URL
#                                        as the last line on stdout: http://127.0.0.1:PORT
#                                        Data already in DIR is kept, so stop + start restarts.
#   scripts/influxdb.sh stop DIR         stop the server of DIR (no error if it is not running)
#   scripts/influxdb.sh install          install influxd if missing; print its path
#
# influxd is InfluxDB v1.8.10, built with `go install` (about a minute, pure Go; Debian's own
# package is 1.6, without the /api/v2 endpoints that influxdb-client-go/v2 needs). It is cached in
# $EDGEWAN_CACHE/bin (default ${XDG_CACHE_HOME:-~/.cache}/edgewan/bin); set INFLUXD to use
# another binary. Layout of DIR: influxdb.conf, influxd.pid, influxd.log, meta/, data/, wal/.
# Auth off, 127.0.0.1 only, no usage reporting, no _internal monitoring: for tests only.
set -euo pipefail

INFLUXDB_VERSION=v1.8.10

say() { echo "influxdb.sh: $*" >&2; }
die() {
	say "ERROR: $*"
	exit 1
}

usage() {
	cat >&2 <<'EOF'
usage: scripts/influxdb.sh start DIR PORT
       scripts/influxdb.sh stop DIR
       scripts/influxdb.sh install
EOF
	exit 2
}

cache_bin() { echo "${EDGEWAN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edgewan}/bin"; }

# install_influxd prints the path of an influxd binary, building it first if needed.
install_influxd() {
	if [[ -n "${INFLUXD:-}" ]]; then
		[[ -x "$INFLUXD" ]] || die "INFLUXD=$INFLUXD is not an executable"
		echo "$INFLUXD"
		return 0
	fi
	local bin
	bin="$(cache_bin)"
	if [[ -x "$bin/influxd" ]]; then
		echo "$bin/influxd"
		return 0
	fi
	command -v go >/dev/null || die "influxd is not in $bin and go is not installed to build it"
	mkdir -p "$bin"
	# Several test binaries may start at once: one builds, the others wait for it.
	exec 9>"$bin/.influxd.lock"
	flock -w 900 9 || die "timed out waiting for another install of influxd ($bin/.influxd.lock)"
	if [[ ! -x "$bin/influxd" ]]; then
		local tmp
		tmp="$(mktemp -d "$bin/.install-XXXXXX")"
		say "installing influxd $INFLUXDB_VERSION into $bin (go install, about a minute)"
		if ! (cd / && GOBIN="$tmp" GOFLAGS= GOTOOLCHAIN=local go install \
			"github.com/influxdata/influxdb/cmd/influxd@$INFLUXDB_VERSION" >&2); then
			rm -rf "$tmp"
			die "go install github.com/influxdata/influxdb/cmd/influxd@$INFLUXDB_VERSION failed"
		fi
		mv -f "$tmp/influxd" "$bin/influxd"
		rm -rf "$tmp"
		say "installed $bin/influxd"
	fi
	exec 9>&-
	echo "$bin/influxd"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ping PORT: influxd answers GET /ping with 204.
ping() {
	(
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf 'GET /ping HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
		IFS= read -r -t 5 line <&3 || exit 1
		[[ "$line" == "HTTP/1."?" 204"* ]]
	) 2>/dev/null
}

# listens PID PORT: PID holds the socket listening on TCP port PORT (another process may have
# taken the port while influxd was starting: answering /ping is not enough).
listens() {
	local hex inode
	hex="$(printf '%04X' "$2")"
	inode="$(awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { print $10; exit }' /proc/net/tcp /proc/net/tcp6 2>/dev/null)"
	[[ -n "$inode" ]] && ls -l "/proc/$1/fd" 2>/dev/null | grep -qF "socket:[$inode]"
}

# pid_of DIR: the pid of DIR's running influxd, or nothing.
pid_of() {
	local dir="$1" pid
	[[ -f "$dir/influxd.pid" ]] || return 0
	pid="$(tr -dc 0-9 <"$dir/influxd.pid" 2>/dev/null)" || return 0 # influxd removes it on exit
	if [[ -n "$pid" ]] && is_ours "$pid" "$dir"; then
		echo "$pid"
	fi
}

# is_ours PID DIR: PID is alive and is the influxd of DIR (pids get reused).
is_ours() {
	[[ -r "/proc/$1/cmdline" ]] && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$2/influxdb.conf"
}

show_log() {
	local log="$1/influxd.log"
	if [[ -f "$log" ]]; then
		say "last lines of $log:"
		tail -n 20 "$log" | sed 's/^/    /' >&2
	fi
}

cmd_start() {
	local dir="$1" port="$2"
	[[ "$port" =~ ^[0-9]+$ ]] && ((port > 0 && port < 65536)) || die "bad port '$port'"
	local bin
	bin="$(install_influxd)"
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd -P)"

	local pid
	pid="$(pid_of "$dir")"
	if [[ -n "$pid" ]]; then
		grep -qF "bind-address = \"127.0.0.1:$port\"" "$dir/influxdb.conf" ||
			die "influxd of $dir is already running (pid $pid) on another port than $port (stop it first)"
		say "already running in $dir on port $port"
		echo "http://127.0.0.1:$port"
		return 0
	fi
	if port_open "$port"; then
		die "port $port on 127.0.0.1 is already in use by another process"
	fi

	cat >"$dir/influxdb.conf" <<EOF
# scripts/influxdb.sh: throwaway test server
reporting-disabled = true
# The RPC (backup/restore) service: an OS-chosen port, so servers side by side do not collide.
bind-address = "127.0.0.1:0"

[meta]
  dir = "$dir/meta"

[data]
  dir = "$dir/data"
  wal-dir = "$dir/wal"
  query-log-enabled = false
  trace-logging-enabled = false

[monitor]
  store-enabled = false

[http]
  enabled = true
  bind-address = "127.0.0.1:$port"
  auth-enabled = false
  log-enabled = false
  flux-enabled = true

[logging]
  level = "${INFLUXDB_LOG_LEVEL:-warn}"

[continuous_queries]
  enabled = false

[subscriber]
  enabled = false
EOF

	say "starting influxd in $dir on 127.0.0.1:$port"
	# setsid + closed fds: the server outlives this script and holds none of its caller's pipes.
	setsid "$bin" run -config "$dir/influxdb.conf" -pidfile "$dir/influxd.pid" \
		>>"$dir/influxd.log" 2>&1 </dev/null &
	local child=$!

	local i
	for ((i = 0; i < 600; i++)); do
		if ping "$port" && listens "$child" "$port"; then
			say "ready on 127.0.0.1:$port"
			echo "http://127.0.0.1:$port"
			return 0
		fi
		if ! kill -0 "$child" 2>/dev/null; then
			show_log "$dir"
			if grep -q "address already in use" "$dir/influxd.log" 2>/dev/null; then
				die "port $port on 127.0.0.1 is already in use by another process (taken while influxd started)"
			fi
			die "could not start influxd on port $port (it exited)"
		fi
		sleep 0.1
	done
	show_log "$dir"
	kill -KILL "$child" 2>/dev/null || true
	die "influxd started but does not answer /ping on 127.0.0.1:$port after 60s"
}

cmd_stop() {
	local dir="$1"
	if [[ ! -d "$dir" ]]; then
		say "no $dir; nothing to stop"
		return 0
	fi
	dir="$(cd "$dir" && pwd -P)"
	local pid
	pid="$(pid_of "$dir")"
	if [[ -z "$pid" ]]; then
		say "not running in $dir"
		return 0
	fi
	say "stopping influxd in $dir (pid $pid)"
	kill -TERM "$pid" 2>/dev/null || true
	local i
	for ((i = 0; i < 300; i++)); do
		if ! is_ours "$pid" "$dir"; then
			rm -f "$dir/influxd.pid"
			return 0
		fi
		sleep 0.1
	done
	say "influxd did not stop in 30s; killing it"
	kill -KILL "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		if ! is_ours "$pid" "$dir"; then
			rm -f "$dir/influxd.pid"
			return 0
		fi
		sleep 0.1
	done
	die "could not stop influxd (pid $pid) in $dir"
}

case "${1:-}" in
start)
	[[ $# -eq 3 ]] || usage
	cmd_start "$2" "$3"
	;;
stop)
	[[ $# -eq 2 ]] || usage
	cmd_stop "$2"
	;;
install)
	[[ $# -eq 1 ]] || usage
	install_influxd
	;;
*) usage ;;
esac
