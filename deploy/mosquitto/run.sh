#!/bin/sh
# Mosquitto in the edgewan compose stack: wait for the controller's certificate and broker
# files, run the broker, and send it SIGHUP whenever the controller rewrites the password or
# ACL file (at every claim and decommission), so new agents can connect at once.
set -eu
AUTH=/var/lib/edgewan-mosquitto
TLS=/var/lib/edgewan/tls
for f in "$AUTH/edgewan.conf" "$AUTH/passwd" "$AUTH/acl" "$TLS/server.crt" "$TLS/server.key"; do
	while [ ! -s "$f" ]; do
		echo "run.sh: waiting for $f (written by the controller)"
		sleep 2
	done
done
mosquitto -c /edgewan/mosquitto.conf &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null; wait "$pid"; exit 0' TERM INT
# The controller replaces the files by rename: the inode changes with every rewrite.
stamp() { stat -c '%i:%Y:%s' "$AUTH/passwd" "$AUTH/acl" 2>/dev/null | tr '\n' ' '; }
last=$(stamp)
while kill -0 "$pid" 2>/dev/null; do
	sleep 2
	now=$(stamp)
	if [ "$now" != "$last" ]; then
		echo "run.sh: broker files changed; reloading mosquitto"
		kill -HUP "$pid"
		last=$now
	fi
done
wait "$pid"
