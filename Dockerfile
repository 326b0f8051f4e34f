# syntax=docker/dockerfile:1.7
#
# One image, every Warden binary. Build:
#   docker build -t warden:dev .
# Run one process (the ENTRYPOINT picks the binary, default `webhook`):
#   docker run --rm warden:dev                  # webhook
#   docker run --rm warden:dev dispatcher       # any of the six binaries, then its flags
#   docker run --rm warden:dev warden-admin migrate
#
# Stage 1 compiles in the official Rust image with BuildKit cache mounts (registry, git
# checkouts and target/ survive between builds); stage 2 is debian:bookworm-slim with the
# six binaries, the policy file and the sim templates, running as an unprivileged user.

ARG RUST_IMAGE=rust:1.95-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${RUST_IMAGE} AS builder
WORKDIR /src
ENV CARGO_TERM_COLOR=never \
    CARGO_INCREMENTAL=0
COPY . .
# target/ lives in a cache mount, so the binaries are copied out of it inside the same RUN.
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/usr/local/cargo/git,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --release --locked \
        -p mcp-gateway -p webhook -p dispatcher -p scheduler -p platform-sim -p warden-admin \
        -p console@0.1.0 \
 && mkdir -p /out/bin \
 && for b in mcp-gateway webhook dispatcher scheduler platform-sim warden-admin console; do \
        cp "target/release/$b" /out/bin/; \
    done

FROM ${RUNTIME_IMAGE} AS runtime
# ca-certificates: TLS to the real platform API; curl: container health checks
# (`curl -fsS http://127.0.0.1:8080/health`); tini: PID 1 that forwards SIGTERM.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl tini \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 warden \
 && useradd --system --uid 10001 --gid warden --home-dir /app --shell /usr/sbin/nologin warden
WORKDIR /app
COPY --from=builder /out/bin/ /usr/local/bin/
COPY --chown=root:root policies/default.yaml /app/policies/default.yaml
COPY --chown=root:root templates/sim-templates.json /app/templates/sim-templates.json
COPY --chown=root:root --chmod=0755 deploy/entrypoint.sh /usr/local/bin/warden-entrypoint
ENV POLICIES_PATH=/app/policies/default.yaml \
    SIM_TEMPLATES=/app/templates/sim-templates.json \
    RUST_LOG=info
USER 10001:10001
# webhook 8080, dispatcher 9090, scheduler 9091, platform-sim 8089
EXPOSE 8080 9090 9091 8089
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/warden-entrypoint"]
CMD ["webhook"]
