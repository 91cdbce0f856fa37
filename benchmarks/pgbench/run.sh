#!/bin/bash
# Server CPU per transaction of pgbench scripts, in interleaved rounds, on a
# PostgreSQL cluster of its own (nothing else may use it: every process of
# the cluster is counted).
#
#   DATA=/path/to/cluster/data PORT=25480 DB=bench ./run.sh clients seconds rounds script...
#
# For each round and script: transactions per second and the cluster's CPU
# (postmaster with its exited children, plus its live children, from /proc)
# divided by the transactions.
set -eu
c=$1 t=$2 r=$3
shift 3
tck=$(getconf CLK_TCK)
cpu() {
	local pm t x
	pm=$(head -1 "$DATA/postmaster.pid")
	t=$(awk '{print $14+$15+$16+$17}' "/proc/$pm/stat")
	for x in $(pgrep -P "$pm"); do
		t=$((t + $(awk '{print $14+$15}' "/proc/$x/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}
here=$(dirname "$0")
for round in $(seq "$r"); do
	for s in "$@"; do
		b=$(cpu)
		out=$(pgbench -h 127.0.0.1 -p "$PORT" -U postgres -n -M prepared -c "$c" -j 2 -T "$t" -f "$here/$s.sql" "$DB" 2>&1)
		sleep 0.5 # let the clients' backends exit
		a=$(cpu)
		n=$(echo "$out" | awk '/number of transactions actually processed/ {print $NF}' | cut -d/ -f1)
		tps=$(echo "$out" | awk '/^tps/ {printf "%.0f", $3}')
		echo "$round $s tps=$tps server_us_per_tx=$(((a - b) * 1000000 / tck / n))"
	done
done
