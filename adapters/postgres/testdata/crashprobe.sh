#!/bin/sh
# Runs the crash probes (TestCrashProbe in adapters/postgres,
# TestCrashProbeRuntime in app/wiring) against a throwaway cluster that
# this script creates in a temporary directory, on port ${PORT:-25433},
# and removes afterwards. It never touches any other server. Run from the
# module root: sh adapters/postgres/testdata/crashprobe.sh
set -eu
# Below the usual ephemeral range (32768-60999), where a client socket of
# an earlier run can hold the port for a minute.
PORT=${PORT:-25433}
BIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)}
DIR=$(mktemp -d /tmp/runlimit-crash.XXXXXX)
AS=""
if [ "$(id -u)" = 0 ]; then
	# initdb and postgres refuse to run as root.
	chown postgres "$DIR"
	AS="runuser -u postgres --"
fi
$AS "$BIN/initdb" -D "$DIR/data" -A trust -U postgres >"$DIR/initdb.log"
OPTS="-p $PORT -k $DIR -c listen_addresses=127.0.0.1"
export RUNLIMIT_CRASH_URL="postgres://postgres@127.0.0.1:$PORT/postgres"
export RUNLIMIT_CRASH_PIDFILE="$DIR/data/postmaster.pid"
export RUNLIMIT_CRASH_START="$AS $BIN/pg_ctl -D $DIR/data -w -o '$OPTS' -l $DIR/log start"
export RUNLIMIT_CRASH_STOP="$AS $BIN/pg_ctl -D $DIR/data -w -m fast stop"
if [ "$(id -u)" = 0 ]; then
	# The disk-full scenario fills a small tmpfs holding a tablespace.
	mkdir "$DIR/tiny"
	mount -t tmpfs -o size=40m,mode=0755 tmpfs "$DIR/tiny"
	chown postgres "$DIR/tiny"
	export RUNLIMIT_CRASH_TINY="$DIR/tiny"
fi
cleanup() {
	$AS "$BIN/pg_ctl" -D "$DIR/data" -m immediate stop >/dev/null 2>&1 || true
	if [ -n "${RUNLIMIT_CRASH_TINY:-}" ]; then
		umount "$RUNLIMIT_CRASH_TINY" || true
	fi
	rm -rf "$DIR"
}
trap cleanup EXIT
# A client socket may hold the port for a moment, as the probes'
# restarts also allow for.
tries=0
until sh -c "$RUNLIMIT_CRASH_START" >/dev/null; do
	tries=$((tries + 1))
	if [ $tries -ge 20 ]; then
		cat "$DIR/log"
		exit 1
	fi
	sleep 0.5
done
status=0
go test ./adapters/postgres -run '^TestCrashProbe$' -count=1 -v "$@" || status=1
go test ./app/wiring -run '^TestCrashProbeRuntime$' -count=1 -v "$@" || status=1
exit $status
