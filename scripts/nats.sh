#!/usr/bin/env bash
# Throwaway 3-node NATS clusters for tests and the scale-out bench (controller/mqtt/natstest
# runs it): each node has a client port, a cluster port, an MQTT 3.1.1 listener and JetStream,
# all on 127.0.0.1.
#
#   scripts/nats.sh start DIR BASEPORT [USER PASSWORD]
#                            write DIR/nodeN.conf (N = 1..3), start the three nodes and wait
#                            until JetStream has a meta leader. Node N listens on
#                              client  BASEPORT+10*(N-1)      (nats://)
#                              cluster BASEPORT+10*(N-1)+1
#                              mqtt    BASEPORT+10*(N-1)+2    (tcp://, MQTT 3.1.1)
#                              monitor BASEPORT+10*(N-1)+3    (http://, /healthz /jsz)
#                            and prints the client URLs, comma-separated, as the last line.
#                            USER/PASSWORD (default edgewan/edgewan) is the one account of the
#                            test cluster (the MQTT listener needs a login).
#                            With AUTH_CONF=FILE the cluster runs in NATS operator mode instead
#                            (decentralised JWT auth, per-device users): FILE is the auth.conf of
#                            `controller nats-init` (operator JWT path, system account, preloaded
#                            account JWTs, whose account carries the partition mapping); each
#                            node gets a full resolver in DIR/nodeN/jwt, and USER/PASSWORD and
#                            the mappings below are not used (docs/scale-out.md).
#   scripts/nats.sh stop DIR [N]   stop node N (default: all); kill -9 with KILL=1
#   scripts/nats.sh lameduck DIR N graceful stop of node N for maintenance (SIGUSR2: lame duck
#                                  mode): the node hands every Raft leadership it holds to
#                                  another node at once (no election timeout), stops taking
#                                  NATS clients, and after lame_duck_grace_period (1 s here)
#                                  closes its clients, MQTT ones included, spread over
#                                  lame_duck_duration (30 s here, the minimum) less the grace
#                                  period, at most one a second (nats-server's lameDuckMode),
#                                  then exits. Returns at once; the node exits by itself
#                                  within about 31 s (at once without clients, in seconds with
#                                  a few).
#   scripts/nats.sh restart DIR N  start node N again with its data (after a lameduck, once the
#                                  old process has exited)
#   scripts/nats.sh install        install nats-server if missing (Debian's, with apt) and
#                                  print its path
#
# Which nats-server: NATS_SERVER=PATH runs that binary; NATS_SERVER_VERSION=v2.X.Y runs that
# release, built by `install` with go install into $EDGEWAN_CACHE/bin (default
# ~/.cache/edgewan/bin; about 1.5 minutes); otherwise Debian's nats-server (2.9.10 on Debian 12),
# the product's default (docs/scale-out.md: a newer release did not make a node's death shorter).
# NATS_MQTT_JS_API_TIMEOUT=DURATION sets mqtt { js_api_timeout } (nats-server 2.11 and later).
#
# Subject mapping: agents' messages (edgewan/v1/sites/{site}/{telemetry,acks,events,status})
# are mapped to edgewan.in.{partition}.{site}.{kind}, partition = the server's hash of the site
# into PARTITIONS (default 16) buckets, so a controller consumes only its partitions (see
# docs/scale-out.md). JetStream keeps MQTT sessions and retained messages with 3 replicas.
set -euo pipefail

say() { echo "nats.sh: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }
PARTITIONS="${PARTITIONS:-16}"

cache_bin() { echo "${EDGEWAN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edgewan}/bin"; }

# find_bin prints the nats-server to run: NATS_SERVER, else the go-installed release named by
# NATS_SERVER_VERSION, else Debian's.
find_bin() {
	local b
	if [[ -n "${NATS_SERVER:-}" ]]; then
		[[ -x "$NATS_SERVER" ]] || die "NATS_SERVER=$NATS_SERVER is not an executable"
		echo "$NATS_SERVER"
		return 0
	fi
	if [[ -n "${NATS_SERVER_VERSION:-}" ]]; then
		b="$(cache_bin)/nats-server-$NATS_SERVER_VERSION"
		[[ -x "$b" ]] || return 1
		echo "$b"
		return 0
	fi
	for b in "$(command -v nats-server 2>/dev/null || true)" /usr/sbin/nats-server /usr/bin/nats-server; do
		if [[ -n "$b" && -x "$b" ]]; then
			echo "$b"
			return 0
		fi
	done
	return 1
}

# go_install builds nats-server $NATS_SERVER_VERSION with go install into the cache (about a
# minute and a half, pure Go), like scripts/influxdb.sh; concurrent callers wait for one build.
go_install() {
	local bin tmp v=$NATS_SERVER_VERSION
	[[ "$v" =~ ^v2\.[0-9]+\.[0-9]+$ ]] || die "NATS_SERVER_VERSION=$v: want v2.X.Y"
	command -v go >/dev/null || die "go is not installed to build nats-server $v"
	bin="$(cache_bin)"
	mkdir -p "$bin"
	exec 9>"$bin/.nats-server.lock"
	flock -w 900 9 || die "timed out waiting for another install of nats-server ($bin/.nats-server.lock)"
	if [[ ! -x "$bin/nats-server-$v" ]]; then
		tmp="$(mktemp -d "$bin/.install-XXXXXX")"
		say "installing nats-server $v into $bin (go install)"
		if ! (cd / && GOBIN="$tmp" GOFLAGS= GOTOOLCHAIN=local go install \
			"github.com/nats-io/nats-server/v2@$v" >&2); then
			rm -rf "$tmp"
			die "go install github.com/nats-io/nats-server/v2@$v failed"
		fi
		mv -f "$tmp/nats-server" "$bin/nats-server-$v"
		rm -rf "$tmp"
	fi
	exec 9>&-
}

# install_nats installs the nats-server find_bin names if it is missing and prints its path.
install_nats() {
	if find_bin >/dev/null; then
		find_bin
		return 0
	fi
	if [[ -n "${NATS_SERVER_VERSION:-}" ]]; then
		go_install
		find_bin
		return 0
	fi
	local sudo=()
	if [[ $EUID -ne 0 ]]; then
		command -v sudo >/dev/null || die "nats-server is not installed and we are not root (no sudo either): install the 'nats-server' package"
		sudo=(sudo)
	fi
	say "nats-server not found; installing it with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	"${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update >&2 || die "apt-get update failed"
	"${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends nats-server >&2 ||
		die "apt-get install nats-server failed"
	find_bin || die "nats-server still not found after installing it"
}

write_conf() { # DIR N BASEPORT USER PASSWORD
	local dir=$1 n=$2 base=$3 user=$4 pass=$5 routes="" i
	for i in 1 2 3; do
		routes+="    nats-route://127.0.0.1:$((base + 10 * (i - 1) + 1))"$'\n'
	done
	local p=$((base + 10 * (n - 1)))
	mkdir -p "$dir/node$n"
	local auth
	if [[ -n "${AUTH_CONF:-}" ]]; then
		# include paths are relative to the including file: the copy sits next to it
		auth="include \"auth.conf\"
resolver: {
  type: full
  dir: \"$dir/node$n/jwt\"
  allow_delete: false
  interval: \"2m\"
}"
	else
		auth="authorization {
  users: [ { user: \"$user\", password: \"$pass\" } ]
}
mappings: {
  \"edgewan.v1.sites.*.telemetry\": \"edgewan.in.{{partition($PARTITIONS,1)}}.{{wildcard(1)}}.telemetry\"
  \"edgewan.v1.sites.*.acks\":      \"edgewan.in.{{partition($PARTITIONS,1)}}.{{wildcard(1)}}.acks\"
  \"edgewan.v1.sites.*.events\":    \"edgewan.in.{{partition($PARTITIONS,1)}}.{{wildcard(1)}}.events\"
  \"edgewan.v1.sites.*.status\":    \"edgewan.in.{{partition($PARTITIONS,1)}}.{{wildcard(1)}}.status\"
}"
	fi
	cat >"$dir/node$n.conf" <<CONF
server_name: n$n
listen: 127.0.0.1:$p
# a graceful stop (lame duck mode, scripts/nats.sh lameduck): leaders moved, then clients
# closed over 30 s (the minimum)
lame_duck_grace_period: "1s"
lame_duck_duration: "30s"
http: 127.0.0.1:$((p + 3))
jetstream {
  store_dir: "$dir/node$n"
  max_memory_store: 64MB
  max_file_store: 1GB
}
cluster {
  name: edgewan
  listen: 127.0.0.1:$((p + 1))
  routes: [
$routes  ]
}
mqtt {
  listen: 127.0.0.1:$((p + 2))
  # sessions and retained messages: 3 replicas
  stream_replicas: 3
  ack_wait: "30s"
$(mqtt_extra)
}
$auth
CONF
}

# mqtt_extra: the mqtt {} lines that depend on the server's version. nats-server 2.9 takes
# consumer_replicas; 2.10 and later give MQTT consumers their stream's replicas and refuse the
# option (`nats-server -t`: "consumer replicas setting ignored in this server version").
mqtt_extra() {
	local bin v
	bin="$(find_bin)" || die "nats-server not installed (scripts/nats.sh install)"
	v="$("$bin" --version)"
	if [[ "$v" =~ v2\.9\. ]]; then
		echo "  consumer_replicas: 3"
	fi
	if [[ -n "${NATS_MQTT_JS_API_TIMEOUT:-}" ]]; then
		echo "  js_api_timeout: \"$NATS_MQTT_JS_API_TIMEOUT\""
	fi
}

start_node() { # DIR N
	local dir=$1 n=$2 bin
	bin="$(find_bin)" || die "nats-server not installed (scripts/nats.sh install)"
	"$bin" -c "$dir/node$n.conf" -P "$dir/node$n.pid" -l "$dir/node$n.log" </dev/null >/dev/null 2>&1 &
	disown || true
}

monitor_port() { # DIR N: from the config
	sed -n 's/^http: 127.0.0.1:\([0-9]*\)$/\1/p' "$1/node$2.conf"
}

wait_healthy() { # DIR N...
	local dir=$1 n i mp
	shift
	for n in "$@"; do
		mp="$(monitor_port "$dir" "$n")"
		for ((i = 0; i < 300; i++)); do
			if curl -fsS "http://127.0.0.1:$mp/healthz?js-enabled-only=true" >/dev/null 2>&1 &&
				curl -fsS "http://127.0.0.1:$mp/jsz" 2>/dev/null | grep -q '"leader"'; then
				continue 2
			fi
			sleep 0.1
		done
		tail -20 "$dir/node$n.log" >&2 || true
		die "node $n of $dir not healthy after 30 s"
	done
}

stop_node() { # DIR N
	local dir=$1 n=$2 pid i
	[[ -f "$dir/node$n.pid" ]] || return 0
	pid="$(cat "$dir/node$n.pid")"
	rm -f "$dir/node$n.pid"
	kill -0 "$pid" 2>/dev/null || return 0
	if [[ "${KILL:-0}" == 1 ]]; then
		kill -9 "$pid"
	else
		kill "$pid"
	fi
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
}

wait_exit() { # DIR N: a node still running (in lame duck mode, which leaves its pid file) must
	# exit before it starts again: the new process could not bind its ports, and wait_healthy
	# would take the old one's answers for the new one's
	local dir=$1 n=$2 pid i
	[[ -f "$dir/node$n.pid" ]] || return 0
	pid="$(cat "$dir/node$n.pid")"
	for ((i = 0; i < 600; i++)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			rm -f "$dir/node$n.pid"
			return 0
		fi
		sleep 0.1
	done
	die "node $n of $dir (pid $pid) still runs after 60 s: stop it first"
}

case "${1:-}" in
install) install_nats ;;
start)
	[[ $# -ge 3 ]] || die "usage: scripts/nats.sh start DIR BASEPORT [USER PASSWORD]"
	dir=$2 base=$3 user=${4:-edgewan} pass=${5:-edgewan}
	mkdir -p "$dir"
	if [[ -n "${AUTH_CONF:-}" ]]; then
		[[ -f "$AUTH_CONF" ]] || die "AUTH_CONF=$AUTH_CONF: no such file"
		cp "$AUTH_CONF" "$dir/auth.conf"
	fi
	for n in 1 2 3; do write_conf "$dir" "$n" "$base" "$user" "$pass"; done
	for n in 1 2 3; do start_node "$dir" "$n"; done
	wait_healthy "$dir" 1 2 3
	echo "nats://127.0.0.1:$base,nats://127.0.0.1:$((base + 10)),nats://127.0.0.1:$((base + 20))"
	;;
stop)
	[[ $# -ge 2 ]] || die "usage: scripts/nats.sh stop DIR [N]"
	if [[ -n "${3:-}" ]]; then stop_node "$2" "$3"; else for n in 1 2 3; do stop_node "$2" "$n"; done; fi
	;;
lameduck)
	[[ $# -eq 3 ]] || die "usage: scripts/nats.sh lameduck DIR N"
	[[ -f "$2/node$3.pid" ]] || die "node $3 of $2 is not running"
	kill -USR2 "$(cat "$2/node$3.pid")"
	;;
restart)
	[[ $# -eq 3 ]] || die "usage: scripts/nats.sh restart DIR N"
	wait_exit "$2" "$3"
	start_node "$2" "$3"
	wait_healthy "$2" "$3"
	;;
*) die "usage: scripts/nats.sh start DIR BASEPORT [USER PASSWORD] | stop DIR [N] | lameduck DIR N | restart DIR N | install" ;;
esac
