#!/bin/sh
# temporal-schema service (temporalio/admin-tools): creates Temporal's
# databases on PostgreSQL and applies the schema. Safe to run on every
# `docker compose up`: `create` failing because the database exists is
# tolerated, `setup-schema -v 0.0` skips an initialised database, and
# `update-schema` applies only versions newer than the recorded one.
#
# Environment (docker-compose.yml): DB, POSTGRES_SEEDS, DB_PORT,
# POSTGRES_USER, SQL_PASSWORD (read by temporal-sql-tool), DBNAME,
# VISIBILITY_DBNAME.
set -eu

plugin=${DB:-postgres12}
host=${POSTGRES_SEEDS:-postgresql}
port=${DB_PORT:-5432}
user=${POSTGRES_USER:-temporal}
schema_dir=/etc/temporal/schema/postgresql/v12

sqltool() {
	temporal-sql-tool --plugin "$plugin" --ep "$host" -p "$port" -u "$user" "$@"
}

tries=0
until nc -z "$host" "$port"; do
	tries=$((tries + 1))
	if [ "$tries" -ge 60 ]; then
		echo "setup-schema: PostgreSQL at $host:$port is not reachable" >&2
		exit 1
	fi
	sleep 2
done

for pair in "${DBNAME:-temporal}:temporal" "${VISIBILITY_DBNAME:-temporal_visibility}:visibility"; do
	db=${pair%%:*}
	kind=${pair#*:}
	echo "setup-schema: database $db ($kind schema)"
	sqltool --db "$db" create || echo "setup-schema: database $db not created (it probably exists); continuing"
	sqltool --db "$db" setup-schema -v 0.0
	sqltool --db "$db" update-schema -d "$schema_dir/$kind/versioned"
done
echo "setup-schema: done"
