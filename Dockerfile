# syntax=docker/dockerfile:1
# One image recipe for every Switchyard service. Pick the service at build time:
#   docker build --build-arg SERVICE=ingest -t switchyard-ingest .
# (or at run time: docker run -e SERVICE=<name> ...; every service is built into the image).

# --- manifests: only the package.json files, so dependency layers stay cached
#     until a manifest or the lock file changes.
FROM node:20-bookworm-slim AS manifests
WORKDIR /app
COPY package.json package-lock.json ./
COPY libs libs
COPY services services
RUN find libs services -mindepth 2 -maxdepth 2 ! -name package.json -exec rm -rf {} +

# --- build: all dependencies, then bundle services/*/src/main.ts -> services/*/dist/main.js
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY --from=manifests /app ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build \
 && mkdir -p /out \
 && for dist in services/*/dist; do mkdir -p "/out/$(dirname "$dist")" && cp -r "$dist" "/out/$dist"; done

# --- runtime: production dependencies (the bundles keep third-party packages external)
FROM node:20-bookworm-slim AS runtime
ARG SERVICE=ingest
ENV NODE_ENV=production \
    SERVICE=${SERVICE}
WORKDIR /app
COPY --from=manifests /app ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /out/services ./services
COPY config ./config

USER node
# ingest: gRPC 50051, Segment-compatible HTTP 8080; delivery: gRPC 50052; audience-sync: gRPC 50053
EXPOSE 50051 8080 50052 50053
# Without curl/grpc_health_probe in the image: a TCP connect to the service's gRPC port.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "const e = process.env; const port = Number({ delivery: e.DELIVERY_GRPC_PORT || 50052, 'audience-sync': e.AUDIENCE_GRPC_PORT || 50053 }[e.SERVICE] || e.INGEST_GRPC_PORT || 50051); const s = require('node:net').connect(port, '127.0.0.1'); s.setTimeout(2000, () => process.exit(1)); s.on('connect', () => { s.end(); process.exit(0); }); s.on('error', () => process.exit(1));"]
CMD ["sh", "-c", "exec node --enable-source-maps services/$SERVICE/dist/main.js"]
