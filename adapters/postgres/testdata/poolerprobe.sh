#!/bin/sh
# Runs the pooler probe (TestPoolerProbe in adapters/postgres) through a
# PgBouncer that this script starts on a free port, with a configuration
# of its own in a temporary directory, and stops afterwards. Its aliases
# point at a database the probe creates and drops on the PostgreSQL server
# at SERVER_HOST:SERVER_PORT (default 127.0.0.1:5432, role SERVER_USER,
# default postgres, which must be able to create databases and log in
# as trusted), one per pool mode:
#
#   session             pool_mode=session, pool_size 8 (the probe's pgx MaxConns)
#   session-undersized  pool_mode=session, pool_size 3 (fewer than MaxConns)
#   transaction         pool_mode=transaction, pool_size 3
#   statement           pool_mode=statement, pool_size 3
#
# It installs nothing: without pgbouncer on PATH (or in PGBOUNCER) it says
# how to get one and exits 2. It exits non-zero when the probe finds an
# over-admission, a caller left without an answer, or locks or
# transactions left on the server. Run from the module root:
# sh adapters/postgres/testdata/poolerprobe.sh [go test flags]
set -eu
PGBOUNCER=${PGBOUNCER:-$(command -v pgbouncer || true)}
if [ -z "$PGBOUNCER" ]; then
	echo "pooler-probe: pgbouncer not found. Install it (Debian and Ubuntu: apt-get install -y pgbouncer;" >&2
	echo "this script runs its own instance, so the package's service need not run) or set PGBOUNCER=/path/to/pgbouncer." >&2
	exit 2
fi
SERVER_HOST=${SERVER_HOST:-127.0.0.1}
SERVER_PORT=${SERVER_PORT:-5432}
SERVER_USER=${SERVER_USER:-postgres}
DB=runlimit_pooler_$$
DIR=$(mktemp -d /tmp/runlimit-pooler.XXXXXX)
AS=""
if [ "$(id -u)" = 0 ]; then
	# PgBouncer refuses to run as root.
	AS="runuser -u ${PGBOUNCER_USER:-postgres} --"
	chown "${PGBOUNCER_USER:-postgres}" "$DIR"
fi
cleanup() {
	if [ -s "$DIR/pgbouncer.pid" ]; then
		kill "$(cat "$DIR/pgbouncer.pid")" 2>/dev/null || true
	fi
	rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

# A port that nothing listens on, below the usual ephemeral range.
listening() {
	if command -v ss >/dev/null 2>&1; then
		ss -ltn "sport = :$1" | grep -q LISTEN
	else
		return 1
	fi
}
PORT=${PORT:-}
if [ -z "$PORT" ]; then
	PORT=$((26432 + $$ % 1000))
	while listening $PORT; do
		PORT=$((PORT + 1))
	done
fi

SERVER="host=$SERVER_HOST port=$SERVER_PORT dbname=$DB"
cat >"$DIR/pgbouncer.ini" <<INI
[databases]
pooler_session = $SERVER pool_mode=session pool_size=8
pooler_session_small = $SERVER pool_mode=session pool_size=3
pooler_transaction = $SERVER pool_mode=transaction pool_size=3
pooler_statement = $SERVER pool_mode=statement pool_size=3

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PORT
unix_socket_dir =
auth_type = trust
auth_file = $DIR/users.txt
admin_users = $SERVER_USER
max_client_conn = 500
pidfile = $DIR/pgbouncer.pid
logfile = $DIR/pgbouncer.log
INI
printf '"%s" ""\n' "$SERVER_USER" >"$DIR/users.txt"
if [ "$(id -u)" = 0 ]; then
	chown "${PGBOUNCER_USER:-postgres}" "$DIR/pgbouncer.ini" "$DIR/users.txt"
fi
$AS "$PGBOUNCER" -d "$DIR/pgbouncer.ini"
tries=0
until grep -q "listening on 127.0.0.1:$PORT" "$DIR/pgbouncer.log" 2>/dev/null; do
	tries=$((tries + 1))
	if [ $tries -ge 50 ]; then
		echo "pooler-probe: PgBouncer did not start on port $PORT:" >&2
		cat "$DIR/pgbouncer.log" >&2 || true
		exit 1
	fi
	sleep 0.1
done
echo "pooler-probe: $("$PGBOUNCER" --version | head -1) on 127.0.0.1:$PORT, database $DB on $SERVER_HOST:$SERVER_PORT"

B="postgres://$SERVER_USER@127.0.0.1:$PORT"
export RUNLIMIT_POOLER_SERVER_URL="postgres://$SERVER_USER@$SERVER_HOST:$SERVER_PORT/postgres"
export RUNLIMIT_POOLER_DATABASE="$DB"
export RUNLIMIT_POOLER_ADMIN_URL="$B/pgbouncer"
export RUNLIMIT_POOLER_URLS="session=$B/pooler_session,session-undersized=$B/pooler_session_small,transaction=$B/pooler_transaction,statement=$B/pooler_statement"
status=0
go test ./adapters/postgres -run '^TestPoolerProbe$' -count=1 -v -timeout 20m "$@" || status=1
if [ $status -ne 0 ]; then
	echo "pooler-probe: PgBouncer's log:" >&2
	tail -50 "$DIR/pgbouncer.log" >&2 || true
fi
exit $status
