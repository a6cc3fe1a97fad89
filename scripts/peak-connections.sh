#!/usr/bin/env bash
# Runs a command and reports the peak number of client connections on the PostgreSQL and
# MySQL/MariaDB servers while it runs, sampled every ~200 ms, and its wall time.
#
#   scripts/peak-connections.sh cargo test --all-features --test testing
#
# PostgreSQL: client backends in pg_stat_activity (the sampler's own session excluded).
# MySQL/MariaDB: Threads_connected (the sampler's own session excluded), and the server's
# Max_used_connections before and after (a high-water mark since the server started: it only
# moves when the command set a new one). A server that does not answer is reported as such.
# The connection arguments of the clients: PEAK_PSQL_ARGS (default
# `-h 127.0.0.1 -U postgres -d postgres`), PEAK_MYSQL_ARGS (default `-h 127.0.0.1 -P 3306
# -u root`). Exits with the command's status.
set -u

if [ $# -eq 0 ]; then
  echo "usage: $0 command [args...]" >&2
  exit 2
fi

read -r -a psql_args <<<"${PEAK_PSQL_ARGS:--h 127.0.0.1 -U postgres -d postgres}"
read -r -a mysql_args <<<"${PEAK_MYSQL_ARGS:--h 127.0.0.1 -P 3306 -u root}"
mysql_bin=$(command -v mariadb || command -v mysql || true)

pg_now() {
  psql "${psql_args[@]}" -XAtq -c "SELECT count(*) FROM pg_stat_activity \
    WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()" 2>/dev/null
}
my_status() { # $1: the status variable
  [ -n "$mysql_bin" ] || return 1
  "$mysql_bin" "${mysql_args[@]}" -N -B -e "SHOW GLOBAL STATUS LIKE '$1'" 2>/dev/null | awk '{print $2}'
}
my_now() {
  local n
  n=$(my_status Threads_connected) || return 1
  [ -n "$n" ] && echo $((n - 1))
}

pg_before=$(pg_now) || pg_before=""
my_before=$(my_now) || my_before=""
my_max_before=$(my_status Max_used_connections) || my_max_before=""

samples=$(mktemp)
trap 'rm -f "$samples"' EXIT
started=$(date +%s%N)
"$@" &
cmd=$!
while kill -0 "$cmd" 2>/dev/null; do
  echo "$(pg_now || true) $(my_now || true)" >>"$samples"
  sleep 0.2
done
wait "$cmd"
status=$?
ended=$(date +%s%N)

my_max_after=$(my_status Max_used_connections) || my_max_after=""
peak() { awk -v col="$1" 'BEGIN { m = -1 } $col ~ /^[0-9]+$/ && $col + 0 > m { m = $col + 0 } END { print (m < 0 ? "n/a" : m) }' "$samples"; }
echo "peak-connections: command: $*"
echo "peak-connections: exit status $status, wall time $(((ended - started) / 1000000)) ms, $(wc -l <"$samples") samples"
if [ -n "$pg_before" ]; then
  echo "peak-connections: postgres client backends: before ${pg_before}, peak $(peak 1)"
else
  echo "peak-connections: postgres: no answer (psql ${psql_args[*]})"
fi
if [ -n "$my_before" ]; then
  echo "peak-connections: mysql threads connected: before ${my_before}, peak $(peak 2)"
  echo "peak-connections: mysql Max_used_connections: before ${my_max_before}, after ${my_max_after}"
else
  echo "peak-connections: mysql: no answer (${mysql_bin:-no client} ${mysql_args[*]})"
fi
exit "$status"
