#!/usr/bin/env bash
# Throwaway PostgreSQL servers for tests.
#
#   scripts/postgres.sh start DIR PORT   init (if needed) a cluster in DIR, start it on
#                                        127.0.0.1:PORT, wait until it accepts connections and
#                                        print its URL as the last line on stdout:
#                                        postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable
#   scripts/postgres.sh stop DIR         stop the cluster in DIR (no error if it is not running)
#   scripts/postgres.sh install          install PostgreSQL with apt if it is missing
#
# Layout of DIR: data/ (PGDATA), postgres.log, and the unix socket. The cluster is owned by
# the `postgres` system user when run as root (postgres refuses to run as root), otherwise by
# the calling user. Trust auth, 127.0.0.1 only, fsync off: for tests only, never for data.
# Debian's own cluster (5432, /var/lib/postgresql) is left alone, except that right after
# this script installs the package it stops the one the package auto-started.
# Set PG_BIN to use a particular bin directory (default: newest /usr/lib/postgresql/*/bin,
# preferring 15).
set -euo pipefail

say() { echo "postgres.sh: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

usage() {
	cat >&2 <<'EOF'
usage: scripts/postgres.sh start DIR PORT
       scripts/postgres.sh stop DIR
       scripts/postgres.sh install
EOF
	exit 2
}

find_bin() {
	if [[ -n "${PG_BIN:-}" ]]; then
		[[ -x "$PG_BIN/initdb" ]] || return 1
		echo "$PG_BIN"
		return 0
	fi
	if [[ -x /usr/lib/postgresql/15/bin/initdb ]]; then
		echo /usr/lib/postgresql/15/bin
		return 0
	fi
	local d best
	# the glob sorts lexically; pick the highest major version numerically
	best="$(for d in /usr/lib/postgresql/*/bin; do [[ -x "$d/initdb" ]] && echo "$d"; done | sort -V | tail -n 1)"
	[[ -n "$best" ]] || return 1
	echo "$best"
}

install_pg() {
	if find_bin >/dev/null; then
		return 0
	fi
	[[ -z "${PG_BIN:-}" ]] || die "PG_BIN=$PG_BIN has no initdb"
	local sudo=()
	if [[ $EUID -ne 0 ]]; then
		command -v sudo >/dev/null || die "PostgreSQL is not installed and we are not root (no sudo either): install the 'postgresql' package"
		sudo=(sudo)
	fi
	say "PostgreSQL not found in /usr/lib/postgresql/*/bin; installing it with apt-get (this takes a minute)"
	export DEBIAN_FRONTEND=noninteractive
	"${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update >&2 ||
		die "apt-get update failed"
	"${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends postgresql >&2 ||
		die "apt-get install postgresql failed"
	# The Debian package may have created and started its default cluster (5432). We never use
	# it: stop whatever it started so it costs nothing (best effort; no systemd in CI).
	if command -v pg_lsclusters >/dev/null; then
		local ver name
		while read -r ver name _; do
			say "stopping Debian's default cluster $ver/$name (not used by tests)"
			"${sudo[@]}" pg_ctlcluster "$ver" "$name" stop >&2 || true
		done < <(pg_lsclusters --no-header 2>/dev/null | awk '$4 == "online"')
	fi
	find_bin >/dev/null || die "installed postgresql but found no initdb in /usr/lib/postgresql/*/bin"
	say "installed PostgreSQL ($(find_bin))"
}

# as_owner CMD...: run CMD as the cluster owner, from / so no one trips on an unreadable cwd.
as_owner() {
	if [[ $EUID -eq 0 ]]; then
		id postgres >/dev/null 2>&1 || die "no 'postgres' system user (is the postgresql package installed?)"
		(cd / && runuser -u postgres -- "$@")
	else
		(cd / && "$@")
	fi
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

show_log() {
	local log="$1/postgres.log"
	if [[ -f "$log" ]]; then
		say "last lines of $log:"
		tail -n 20 "$log" | sed 's/^/    /' >&2
	fi
}

cmd_start() {
	local dir="$1" port="$2"
	[[ "$port" =~ ^[0-9]+$ ]] && ((port > 0 && port < 65536)) || die "bad port '$port'"
	install_pg
	local bin
	bin="$(find_bin)"
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd -P)"
	local data="$dir/data"
	(( ${#dir} + 20 < 107 )) || die "DIR path too long for a unix socket: $dir"

	if [[ $EUID -eq 0 ]]; then
		chown postgres: "$dir"
		chmod 0700 "$dir"
		as_owner test -w "$dir" ||
			die "user postgres cannot write $dir: every parent directory must be searchable by others (o+x)"
	fi

	# Already running here? Then just report it (idempotent).
	if as_owner "$bin/pg_ctl" status -D "$data" >/dev/null 2>&1; then
		local running
		running="$(sed -n 4p "$data/postmaster.pid")"
		[[ "$running" == "$port" ]] ||
			die "the cluster in $dir is already running on port $running, not $port (stop it first)"
		say "already running in $dir on port $port"
		echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
		return 0
	fi

	if port_open "$port"; then
		die "port $port on 127.0.0.1 is already in use by another process"
	fi

	if [[ ! -f "$data/PG_VERSION" ]]; then
		say "initialising a cluster in $data ($("$bin/postgres" --version))"
		[[ ! -e "$data" ]] || rm -rf "$data"
		as_owner "$bin/initdb" -D "$data" -U postgres -E UTF8 --locale=C \
			--auth-local=trust --auth-host=trust --no-sync >"$dir/initdb.log" 2>&1 || {
			sed 's/^/    /' "$dir/initdb.log" >&2
			die "initdb failed"
		}
		cat >"$data/pg_hba.conf" <<'EOF'
# throwaway test cluster: trust, loopback only
local all all              trust
host  all all 127.0.0.1/32 trust
EOF
		cat >>"$data/postgresql.conf" <<EOF

# --- scripts/postgres.sh: throwaway test cluster ---
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 500
log_min_messages = warning
log_connections = off
log_disconnections = off
EOF
		if [[ $EUID -eq 0 ]]; then
			chown postgres: "$data/pg_hba.conf" "$data/postgresql.conf"
		fi
	fi

	say "starting PostgreSQL in $dir on 127.0.0.1:$port"
	if ! as_owner "$bin/pg_ctl" start -D "$data" -l "$dir/postgres.log" -o "-p $port" -w -t 120 >&2; then
		show_log "$dir"
		die "could not start PostgreSQL on port $port"
	fi

	local i
	for ((i = 0; i < 600; i++)); do
		if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres; then
			say "ready on 127.0.0.1:$port"
			echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
			return 0
		fi
		sleep 0.1
	done
	show_log "$dir"
	die "PostgreSQL started but does not accept connections on 127.0.0.1:$port after 60s"
}

cmd_stop() {
	local dir="$1"
	if [[ ! -d "$dir/data" ]]; then
		say "no cluster in $dir; nothing to stop"
		return 0
	fi
	local bin
	bin="$(find_bin)" || die "PostgreSQL is not installed, cannot stop $dir"
	if ! as_owner "$bin/pg_ctl" status -D "$dir/data" >/dev/null 2>&1; then
		say "not running in $dir"
		return 0
	fi
	say "stopping PostgreSQL in $dir"
	if ! as_owner "$bin/pg_ctl" stop -D "$dir/data" -m fast -w -t 60 >&2; then
		say "fast shutdown failed; trying immediate"
		as_owner "$bin/pg_ctl" stop -D "$dir/data" -m immediate -w -t 30 >&2 ||
			die "could not stop PostgreSQL in $dir"
	fi
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
	install_pg
	say "PostgreSQL binaries: $(find_bin)"
	;;
*) usage ;;
esac
