#!/usr/bin/env bash
# Throwaway Mosquitto brokers for tests (controller/mqtt/mqtttest runs it).
#
#   scripts/mosquitto.sh start DIR PORT [CONF_EXTRA]
#                                  write DIR/mosquitto.conf, start a private broker listening on
#                                  127.0.0.1:PORT, wait until it accepts connections and print
#                                  its URL as the last line on stdout: tcp://127.0.0.1:PORT
#   scripts/mosquitto.sh stop DIR  stop the broker of DIR (no error if it is not running)
#   scripts/mosquitto.sh reload DIR  make the broker of DIR re-read its password and ACL files
#   scripts/mosquitto.sh install   install mosquitto and mosquitto-clients with apt if missing
#
# DIR holds the broker's security files, which controller/mqtt.WriteMosquittoFiles writes:
#   edgewan.conf   the security settings (password_file, acl_file, allow_anonymous false, ...);
#                  used as is when present, so tests run the exact settings operators are given
#   passwd, acl    used directly (allow_anonymous false) when there is no edgewan.conf
# CONF_EXTRA is appended verbatim to the config (e.g. a TLS listener: "listener 8884 127.0.0.1",
# "certfile ...", "keyfile ..."). The script also writes mosquitto.log and mosquitto.pid there.
# Persistence on, in DIR (as deploy/mosquitto/mosquitto.conf): the controller's session, with
# its subscriptions and the QoS 1 messages queued for it, survives a restart of the broker.
set -euo pipefail

say() { echo "mosquitto.sh: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

usage() {
	cat >&2 <<'EOF'
usage: scripts/mosquitto.sh start DIR PORT [CONF_EXTRA]
       scripts/mosquitto.sh stop DIR
       scripts/mosquitto.sh reload DIR
       scripts/mosquitto.sh install
EOF
	exit 2
}

# find_bin prints the mosquitto broker binary (Debian puts it in /usr/sbin, often not on PATH).
find_bin() {
	local b
	for b in "$(command -v mosquitto 2>/dev/null || true)" /usr/sbin/mosquitto /usr/local/sbin/mosquitto; do
		if [[ -n "$b" && -x "$b" ]]; then
			echo "$b"
			return 0
		fi
	done
	return 1
}

install_mosquitto() {
	if find_bin >/dev/null && command -v mosquitto_passwd >/dev/null && command -v mosquitto_pub >/dev/null; then
		return 0
	fi
	local sudo=()
	if [[ $EUID -ne 0 ]]; then
		command -v sudo >/dev/null || die "mosquitto is not installed and we are not root (no sudo either): install the 'mosquitto' and 'mosquitto-clients' packages"
		sudo=(sudo)
	fi
	say "mosquitto not found; installing mosquitto and mosquitto-clients with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	"${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update >&2 ||
		die "apt-get update failed"
	"${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends mosquitto mosquitto-clients >&2 ||
		die "apt-get install mosquitto mosquitto-clients failed"
	# The package may have started Debian's own broker on port 1883. Tests never use it: stop
	# it (best effort; there is no systemd here).
	if [[ -f /run/mosquitto/mosquitto.pid ]]; then
		say "stopping the broker the package started (not used by tests)"
		"${sudo[@]}" kill "$(cat /run/mosquitto/mosquitto.pid)" 2>/dev/null || true
	fi
	find_bin >/dev/null || die "installed mosquitto but found no mosquitto binary"
	say "installed $("$(find_bin)" -h 2>/dev/null | head -n 1 || true)"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# running DIR: prints the pid of DIR's broker if it is alive.
running() {
	local pidf="$1/mosquitto.pid" pid
	[[ -f "$pidf" ]] || return 1
	pid="$(cat "$pidf" 2>/dev/null || true)"
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	# a stale pid file may name an unrelated process: check that it is a mosquitto
	[[ "$(cat "/proc/$pid/comm" 2>/dev/null || true)" == mosquitto* ]] || return 1
	# daemonised, it is reaped by pid 1, which may take its time: a zombie has stopped
	[[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)" != Z ]] || return 1
	echo "$pid"
}

# died DIR: true only if DIR's pid file holds a complete pid whose process has exited.
died() {
	local pid
	pid="$(cat "$1/mosquitto.pid" 2>/dev/null || true)"
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	! kill -0 "$pid" 2>/dev/null ||
		[[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)" == Z ]]
}

show_log() {
	local log="$1/mosquitto.log"
	if [[ -f "$log" ]]; then
		say "last lines of $log:"
		tail -n 20 "$log" | sed 's/^/    /' >&2
	fi
}

cmd_start() {
	local dir="$1" port="$2" extra="${3:-}"
	[[ "$port" =~ ^[0-9]+$ ]] && ((port > 0 && port < 65536)) || die "bad port '$port'"
	[[ -d "$dir" ]] || die "no directory $dir (write the password and ACL files there first)"
	install_mosquitto
	local bin
	bin="$(find_bin)"
	dir="$(cd "$dir" && pwd -P)"
	[[ "$dir" != *[[:space:]]* ]] || die "DIR must not contain white space: $dir"

	local pid
	if pid="$(running "$dir")"; then
		grep -qx "listener $port 127.0.0.1" "$dir/mosquitto.conf" ||
			die "the broker of $dir (pid $pid) is already running on another port (stop it first)"
		say "already running in $dir on port $port (pid $pid)"
		echo "tcp://127.0.0.1:$port"
		return 0
	fi
	if port_open "$port"; then
		die "port $port on 127.0.0.1 is already in use by another process"
	fi

	local security
	if [[ -f "$dir/edgewan.conf" ]]; then
		security="$(cat "$dir/edgewan.conf")"
	else
		[[ -f "$dir/passwd" && -f "$dir/acl" ]] || die "$dir has neither edgewan.conf nor passwd and acl"
		security="allow_anonymous false
password_file $dir/passwd
acl_file $dir/acl"
	fi
	local user_line=""
	# Run as root, mosquitto drops to the 'mosquitto' user, which cannot read a test's private
	# temp dir. Throwaway test broker on loopback: keep root.
	if [[ $EUID -eq 0 ]]; then
		user_line="user root"
	fi
	rm -f "$dir/mosquitto.pid"
	cat >"$dir/mosquitto.conf" <<EOF
# generated by scripts/mosquitto.sh: a throwaway test broker, loopback only
pid_file $dir/mosquitto.pid
log_dest file $dir/mosquitto.log
log_type error
log_type warning
log_type notice
log_type information
connection_messages true
persistence true
persistence_location $dir/
$user_line

listener $port 127.0.0.1

# --- security (edgewan.conf or defaults) ---
$security

# --- extra ---
$extra
EOF

	say "starting $("$bin" -h 2>/dev/null | head -n 1 || echo mosquitto) in $dir on 127.0.0.1:$port"
	: >"$dir/mosquitto.log"
	if ! "$bin" -c "$dir/mosquitto.conf" -d 2>>"$dir/mosquitto.log"; then
		show_log "$dir"
		die "mosquitto failed to start (see $dir/mosquitto.log)"
	fi
	local i
	for ((i = 0; i < 200; i++)); do
		if port_open "$port"; then
			if pid="$(running "$dir")"; then
				say "ready on 127.0.0.1:$port (pid $pid)"
				echo "tcp://127.0.0.1:$port"
				return 0
			fi
		fi
		# Daemonised: if the pid file names a process that is gone, it died. The file is
		# created before the pid is written into it, so an empty or partial read means
		# "not yet", not "dead".
		if died "$dir"; then
			break
		fi
		sleep 0.05
	done
	show_log "$dir"
	cmd_stop "$dir" || true
	die "mosquitto does not accept connections on 127.0.0.1:$port"
}

cmd_stop() {
	local dir="$1" pid
	if ! pid="$(running "$dir")"; then
		say "not running in $dir"
		rm -f "$dir/mosquitto.pid"
		return 0
	fi
	say "stopping mosquitto in $dir (pid $pid)"
	kill -TERM "$pid" 2>/dev/null || true
	local i
	for ((i = 0; i < 100; i++)); do
		running "$dir" >/dev/null || { rm -f "$dir/mosquitto.pid"; return 0; }
		sleep 0.05
	done
	say "still running after 5s; killing it"
	kill -KILL "$pid" 2>/dev/null || true
	rm -f "$dir/mosquitto.pid"
}

cmd_reload() {
	local dir="$1" pid
	pid="$(running "$dir")" || die "no broker running in $dir"
	kill -HUP "$pid"
	say "asked mosquitto in $dir (pid $pid) to reload its password and ACL files"
}

case "${1:-}" in
start)
	[[ $# -eq 3 || $# -eq 4 ]] || usage
	cmd_start "$2" "$3" "${4:-}"
	;;
stop)
	[[ $# -eq 2 ]] || usage
	cmd_stop "$2"
	;;
reload)
	[[ $# -eq 2 ]] || usage
	cmd_reload "$2"
	;;
install)
	[[ $# -eq 1 ]] || usage
	install_mosquitto
	say "mosquitto: $(find_bin)"
	;;
*) usage ;;
esac
