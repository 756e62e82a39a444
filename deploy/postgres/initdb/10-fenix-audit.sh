#!/bin/sh
# Runs once, when the postgres image initialises an empty data volume
# (/docker-entrypoint-initdb.d). Creates Fenix's audit database and its
# owner role, separate from Temporal's databases; the worker creates the
# audit table itself on first start (FENIX_AUDIT_DSN).
#
# A shell script rather than plain .sql so the password comes from the
# environment (FENIX_AUDIT_DB_PASSWORD in docker-compose.yml). psql quotes
# the values (:'var', format %I/%L), so any password is safe here; in the
# worker's DSN URL it must be percent-encoded.
#
# An existing volume is not re-initialised: to add the audit database to
# one, run the same statements by hand (deploy/README.md).
set -e

psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
	-v audit_db="${FENIX_AUDIT_DB:-fenix_audit}" \
	-v audit_user="${FENIX_AUDIT_DB_USER:-fenix}" \
	-v audit_password="${FENIX_AUDIT_DB_PASSWORD:-fenix}" <<'EOSQL'
SELECT format('CREATE ROLE %I LOGIN PASSWORD %L', :'audit_user', :'audit_password')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'audit_user')\gexec
SELECT format('CREATE DATABASE %I OWNER %I', :'audit_db', :'audit_user')
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'audit_db')\gexec
EOSQL
