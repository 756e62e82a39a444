# syntax=docker/dockerfile:1
#
# Fenix worker image (the starter is included for one-off commands).
#
#   docker compose build          # what docker-compose.yml does
#   docker build -t fenix-worker .
#
# Stage 1 builds static binaries with the Go toolchain (CGO_ENABLED=0: the
# embedded SQLite audit store is modernc.org/sqlite, pure Go, so nothing
# needs cgo). Stage 2 runs them on debian slim, not distroless/static: the
# worker needs a real /bin/sh at run time, because exec_command and
# process_exec run their command lines through `/bin/sh -c` (procs.Shell)
# and command hooks from FENIX_HOOKS_FILE run through `/bin/sh -c` too.
# Debian slim also brings the CA bundle for HTTPS model endpoints and bash
# for the compose healthcheck. The runtime user is unprivileged (uid 10001).
#
# Base images are pinned by tag; pin them by digest (image:tag@sha256:...)
# if your registry policy requires it. DEBIAN_TAG=bookworm-slim also works
# (the binaries are static), but Debian 12 left regular security support in
# June 2026, so the default is the current stable release.

ARG GO_VERSION=1.26.8
ARG DEBIAN_TAG=trixie-slim

FROM golang:${GO_VERSION} AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/fenix-worker ./worker && \
    go build -trimpath -ldflags="-s -w" -o /out/fenix-starter ./starter

FROM debian:${DEBIAN_TAG}
# Extra packages for the commands agents run (git, python3, curl, ...):
#   docker compose build --build-arg EXTRA_APT_PACKAGES="git python3"
ARG EXTRA_APT_PACKAGES=""
RUN apt-get update && \
    apt-get install -y --no-install-recommends ca-certificates ${EXTRA_APT_PACKAGES} && \
    rm -rf /var/lib/apt/lists/*
# The data directory and its shared sub-directories exist in the image, owned
# by the runtime user, so fresh named volumes mounted there inherit the
# ownership (Docker copies it into an empty volume on first use).
RUN groupadd --system --gid 10001 fenix && \
    useradd --system --uid 10001 --gid fenix --create-home --home-dir /home/fenix --shell /bin/sh fenix && \
    mkdir -p /var/lib/fenix/contexts /var/lib/fenix/skills/system /var/lib/fenix/skills/curated \
        /var/lib/fenix/skills/installed /workspace /etc/fenix && \
    chown -R fenix:fenix /var/lib/fenix /workspace
COPY --from=build /out/fenix-worker /out/fenix-starter /usr/local/bin/
COPY --from=build /src/examples /usr/share/fenix/examples
ENV FENIX_DATA_DIR=/var/lib/fenix \
    FENIX_WORKSPACE_ROOT=/workspace \
    FENIX_LOG_FORMAT=json \
    FENIX_HTTP_ADDR=:9090
USER 10001:10001
WORKDIR /workspace
VOLUME ["/var/lib/fenix", "/workspace"]
# /metrics, /healthz, /readyz and the codec server /codec/ on FENIX_HTTP_ADDR
# (all interfaces here; the worker's own default is loopback).
EXPOSE 9090
ENTRYPOINT ["fenix-worker"]
