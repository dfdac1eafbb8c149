#!/bin/sh
# Mosquitto in the edgewan compose stack: wait for the controller's certificate and broker
# files, run the broker, and send it SIGHUP whenever the controller rewrites the password or
# ACL file (at every claim and decommission), so new agents can connect at once.
set -eu
# The compose stack's paths; the deploy test runs this very script with its own.
AUTH=${EDGEWAN_MOSQUITTO_DIR:-/var/lib/edgewan-mosquitto}
TLS=${EDGEWAN_TLS_DIR:-/var/lib/edgewan/tls}
CONF=${MOSQUITTO_CONF:-/edgewan/mosquitto.conf}
BIN=${MOSQUITTO_BIN:-mosquitto}
POLL=${RELOAD_POLL_SECONDS:-2}
for f in "$AUTH/edgewan.conf" "$AUTH/passwd" "$AUTH/acl" "$TLS/server.crt" "$TLS/server.key"; do
	while [ ! -s "$f" ]; do
		echo "run.sh: waiting for $f (written by the controller)"
		sleep "$POLL"
	done
done
"$BIN" -c "$CONF" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null; wait "$pid"; exit 0' TERM INT
# The controller replaces the files by rename: the inode changes with every rewrite.
stamp() { stat -c '%i:%Y:%s' "$AUTH/passwd" "$AUTH/acl" 2>/dev/null | tr '\n' ' '; }
last=$(stamp)
while kill -0 "$pid" 2>/dev/null; do
	sleep "$POLL"
	now=$(stamp)
	if [ "$now" != "$last" ]; then
		echo "run.sh: broker files changed; reloading mosquitto"
		kill -HUP "$pid"
		last=$now
	fi
done
wait "$pid"
