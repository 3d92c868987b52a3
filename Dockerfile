# syntax=docker/dockerfile:1
# One image recipe for every Switchyard service. Pick the service at build time:
#   docker build --build-arg SERVICE=ingest -t switchyard-ingest .
# (or at run time: docker run -e SERVICE=<name> ...; every service is built into the image).

# --- manifests: only the package.json files, so dependency layers stay cached
#     until a manifest or the lock file changes.
FROM node:24-bookworm-slim AS manifests
WORKDIR /app
COPY package.json package-lock.json ./
COPY libs libs
COPY apps apps
COPY services services
RUN find libs -mindepth 3 -maxdepth 3 ! -name package.json -exec rm -rf {} + \
 && find apps services -mindepth 2 -maxdepth 2 ! -name package.json -exec rm -rf {} +

# --- build: all dependencies, then bundle services/*/src/main.ts -> services/*/dist/main.js (and worker-thread entries beside it)
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY --from=manifests /app ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build \
 && mkdir -p /out \
 && for dist in services/*/dist; do mkdir -p "/out/$(dirname "$dist")" && cp -r "$dist" "/out/$dist"; done

# --- runtime: production dependencies (the bundles keep third-party packages external)
FROM node:24-bookworm-slim AS runtime
ARG SERVICE=ingest
ENV NODE_ENV=production \
    SERVICE=${SERVICE}
WORKDIR /app
COPY --from=manifests /app ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /out/services ./services
COPY config ./config
COPY scripts/healthcheck.mjs ./scripts/healthcheck.mjs

# Everything above belongs to root and is read-only for the service; it writes nothing (state lives in NATS).
USER node
# ingest: gRPC 50051, Segment-compatible HTTP 8080; delivery: gRPC 50052; audience-sync: gRPC 50053;
# console: HTTP 8090; insights: gRPC 50054; ops endpoints (/healthz, /readyz, /metrics): ingest 9101,
# delivery 9102, audience-sync 9103, insights 9104, console 9105
EXPOSE 50051 8080 50052 50053 50054 8090 9101 9102 9103 9104 9105
# Liveness, with node since the image has no curl: /healthz on the service's ops port ($SERVICE picks it).
# Liveness rather than readiness, so that a NATS outage does not get containers replaced by an orchestrator;
# docker-compose.yml probes /readyz instead.
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "/app/scripts/healthcheck.mjs", "/healthz"]
CMD ["sh", "-c", "exec node --enable-source-maps services/$SERVICE/dist/main.js"]
