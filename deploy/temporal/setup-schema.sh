#!/bin/sh
# temporal-schema service (temporalio/admin-tools): creates Temporal's
# databases on PostgreSQL and applies the schema. Safe to run on every
# `docker compose up`: `create` failing because the database exists is
# tolerated, `setup-schema -v 0.0` skips an initialised database, and
# `update-schema` applies only versions newer than the recorded one.
#
# Environment (docker-compose.yml): DB, POSTGRES_SEEDS, DB_PORT,
# POSTGRES_USER, SQL_PASSWORD (read by temporal-sql-tool), DBNAME,
# VISIBILITY_DBNAME, and SCHEMA_DIR (default: the admin-tools image's
# schema directory).
#
# The cluster test (internal/harness/cluster) runs this same script outside Docker,
# with temporal-sql-tool built from the Go module proxy on PATH and
# SCHEMA_DIR pointing at the server module's schema/postgresql/v12.
set -eu

plugin=${DB:-postgres12}
host=${POSTGRES_SEEDS:-postgresql}
port=${DB_PORT:-5432}
user=${POSTGRES_USER:-temporal}
schema_dir=${SCHEMA_DIR:-/etc/temporal/schema/postgresql/v12}

sqltool() {
	temporal-sql-tool --plugin "$plugin" --ep "$host" -p "$port" -u "$user" "$@"
}

# reachable: nc in the admin-tools image, pg_isready where PostgreSQL's
# client is installed; with neither, the schema tool's own error tells.
reachable() {
	if command -v nc >/dev/null 2>&1; then
		nc -z "$host" "$port"
	elif command -v pg_isready >/dev/null 2>&1; then
		pg_isready -q -h "$host" -p "$port"
	else
		return 0
	fi
}

tries=0
until reachable; do
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
