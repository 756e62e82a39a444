#!/bin/sh
# temporal-init service (temporalio/admin-tools): waits for the Temporal
# server, creates the namespace if it is missing and registers Fenix's
# custom search attributes. Idempotent: what exists is left alone, so it is
# safe on every `docker compose up`.
#
# Environment (docker-compose.yml):
#   TEMPORAL_ADDRESS              frontend, default temporal:7233
#   TEMPORAL_NAMESPACE            default "default"
#   TEMPORAL_NAMESPACE_RETENTION  retention of a newly created namespace, default 72h
#   FENIX_SEARCH_ATTRIBUTES       NAME=TYPE pairs separated by white space
#   INIT_MAX_TRIES                attempts per step, 2 s apart, default 90
set -eu

address=${TEMPORAL_ADDRESS:-temporal:7233}
namespace=${TEMPORAL_NAMESPACE:-default}
retention=${TEMPORAL_NAMESPACE_RETENTION:-72h}
attributes=${FENIX_SEARCH_ATTRIBUTES:?FENIX_SEARCH_ATTRIBUTES must list NAME=TYPE pairs}
max_tries=${INIT_MAX_TRIES:-90}

# retry CMD...: runs CMD until it succeeds, at most max_tries times.
retry() {
	n=1
	until "$@"; do
		if [ "$n" -ge "$max_tries" ]; then
			echo "temporal-init: giving up after $n attempts: $*" >&2
			return 1
		fi
		n=$((n + 1))
		sleep 2
	done
}

# Set when the namespace was there before this run, and when this run
# registered an attribute: see the wait at the end.
namespace_existed=0
created_attribute=0

ensure_namespace() {
	if temporal operator namespace describe --namespace "$namespace" --address "$address" >/dev/null 2>&1; then
		echo "temporal-init: namespace $namespace exists"
		namespace_existed=1
		return 0
	fi
	temporal operator namespace create --namespace "$namespace" --retention "$retention" --address "$address"
}

# ensure_attribute NAME TYPE
ensure_attribute() {
	existing=$(temporal operator search-attribute list --namespace "$namespace" --address "$address") || return 1
	if printf '%s\n' "$existing" | grep -Eq "(^|[[:space:]])$1([[:space:]]|\$)"; then
		echo "temporal-init: search attribute $1 already registered"
		return 0
	fi
	temporal operator search-attribute create --namespace "$namespace" --address "$address" --name "$1" --type "$2" &&
		created_attribute=1
}

echo "temporal-init: waiting for $address"
retry temporal operator cluster health --address "$address"
retry ensure_namespace
# A new namespace takes a moment to reach the frontend's cache.
retry temporal operator search-attribute list --namespace "$namespace" --address "$address" >/dev/null

for spec in $attributes; do
	name=${spec%%=*}
	type=${spec#*=}
	if [ -z "$name" ] || [ "$name" = "$spec" ] || [ -z "$type" ]; then
		echo "temporal-init: bad entry \"$spec\" in FENIX_SEARCH_ATTRIBUTES (want NAME=TYPE)" >&2
		exit 1
	fi
	retry ensure_attribute "$name" "$type"
done
# The server reads search attributes from a cache it refreshes every 60 s
# (deploy/temporal/dynamicconfig/fenix.yaml leaves the forced read off). A
# history service that has already served runs may not know an attribute
# registered just now, and would fail the workflow tasks that set it until
# its cache refreshes: on an existing namespace, wait that out so workers
# started after this job can use the new attribute at once.
if [ "$created_attribute" = 1 ] && [ "$namespace_existed" = 1 ]; then
	wait_s=${FENIX_SEARCH_ATTRIBUTE_CACHE_WAIT:-61}
	echo "temporal-init: new search attribute on an existing namespace; waiting ${wait_s}s for the server's search-attribute cache"
	sleep "$wait_s"
fi
echo "temporal-init: namespace $namespace ready with: $attributes"
