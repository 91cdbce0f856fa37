#!/usr/bin/env bash
# Runs both comparisons of issue 14 and regenerates everything in $OUT
# (default results/):
#   peers.txt, peers.csv    the memory store against the Go peers (cmd/peerbench)
#   pgload.md, pgload.csv   the PostgreSQL store, locked and optimistic, against its
#                           floor, its baselines and Redis (cmd/pgload)
#   chart.svg, tables.md    the chart and the tables with ratios (cmd/benchchart)
#
#   ./run.sh          the measurement, an estimated ten minutes on 2 vCPUs
#   ./run.sh smoke    a quick, noisy check that every tool works (about two minutes)
#
# Settings come from the environment: COUNT, RETAINED_COUNT, BENCHTIME (peers),
# PG_DURATION, PG_ROUNDS, CALLERS, DATABASE_URL, REDIS_ADDR (pgload), OUT.
# pgload needs a PostgreSQL server where it may create a database (default: the
# local one) and uses the Redis at REDIS_ADDR (default 127.0.0.1:6379), starting
# one without persistence when none answers.
set -euo pipefail
cd "$(dirname "$0")"

mode=${1:-full}
case "$mode" in
full)
	: "${COUNT:=6}" "${RETAINED_COUNT:=3}" "${BENCHTIME:=1s}"
	: "${PG_DURATION:=6s}" "${PG_ROUNDS:=3}"
	;;
smoke)
	: "${COUNT:=1}" "${RETAINED_COUNT:=1}" "${BENCHTIME:=100ms}"
	: "${PG_DURATION:=1s}" "${PG_ROUNDS:=1}"
	;;
*)
	echo "usage: $0 [full|smoke]" >&2
	exit 2
	;;
esac
: "${CALLERS:=1,8,32}" "${OUT:=results}"
mkdir -p "$OUT"

settings="COUNT=$COUNT RETAINED_COUNT=$RETAINED_COUNT BENCHTIME=$BENCHTIME PG_DURATION=$PG_DURATION PG_ROUNDS=$PG_ROUNDS CALLERS=$CALLERS"
echo "run.sh $mode: $settings" >&2

go run ./cmd/peerbench -count "$COUNT" -retained-count "$RETAINED_COUNT" -benchtime "$BENCHTIME" \
	-raw "$OUT/peers.txt" -csv "$OUT/peers.csv"

pgload=(-duration "$PG_DURATION" -rounds "$PG_ROUNDS" -callers "$CALLERS" -csv "$OUT/pgload.csv")
if [ -n "${DATABASE_URL:-}" ]; then pgload+=(-database-url "$DATABASE_URL"); fi
if [ -n "${REDIS_ADDR:-}" ]; then pgload+=(-redis-addr "$REDIS_ADDR"); fi
go run ./cmd/pgload "${pgload[@]}" | tee "$OUT/pgload.md"

go run ./cmd/benchchart -peers "$OUT/peers.csv" -pgload "$OUT/pgload.csv" \
	-svg "$OUT/chart.svg" -md "$OUT/tables.md" -command "$settings benchmarks/run.sh $mode"
echo "run.sh: wrote $OUT/chart.svg and $OUT/tables.md" >&2
