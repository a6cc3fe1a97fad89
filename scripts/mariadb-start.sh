#!/usr/bin/env bash
# Starts the machine's MariaDB server when it is installed but does not answer on
# 127.0.0.1:3306, and waits until `mariadb-admin ping` answers. Does nothing when
# SQL_MIDDLEWARE_MYSQL_URL names a server. Exits non-zero when no local server could be
# started (the MySQL tests then start a throwaway one, see tests/common/mysql.rs).
set -u

if [ -n "${SQL_MIDDLEWARE_MYSQL_URL:-}" ]; then
  echo "SQL_MIDDLEWARE_MYSQL_URL is set; not touching the local server"
  exit 0
fi

admin=$(command -v mariadb-admin || command -v mysqladmin || true)
if [ -z "$admin" ]; then
  echo "no mariadb-admin or mysqladmin: the MariaDB client is not installed"
  exit 1
fi
ping() { "$admin" --protocol=tcp -h 127.0.0.1 -P 3306 -u root --connect-timeout=2 ping >/dev/null 2>&1; }

if ping; then
  echo "MariaDB answers on 127.0.0.1:3306"
  exit 0
fi

server=$(command -v mariadbd || command -v mysqld || ls /usr/sbin/mariadbd /usr/sbin/mysqld 2>/dev/null | head -n 1)
if [ -z "$server" ]; then
  echo "no mariadbd or mysqld: the MariaDB server is not installed"
  exit 1
fi

# No systemd here: the init script first, then the server by hand (as the `mysql` user,
# with the distribution's configuration).
if command -v service >/dev/null 2>&1 && service mariadb start >/dev/null 2>&1; then
  echo "started MariaDB with 'service mariadb start'"
else
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null
  if command -v mysqld_safe >/dev/null 2>&1; then
    nohup mysqld_safe >/dev/null 2>&1 &
    echo "started MariaDB with mysqld_safe (pid $!)"
  else
    nohup "$server" --user=mysql >/dev/null 2>&1 &
    echo "started MariaDB with $server --user=mysql (pid $!)"
  fi
fi

for _ in $(seq 1 60); do
  if ping; then
    echo "MariaDB answers on 127.0.0.1:3306"
    exit 0
  fi
  sleep 1
done
echo "MariaDB did not answer on 127.0.0.1:3306 within 60 s"
exit 1
