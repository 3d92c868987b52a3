#!/usr/bin/env bash
# Validates docker-compose.yml without starting anything (npm run compose:check):
# the default stack, and the cluster setup (profile "cluster" with its env file).
# Uses the standalone docker-compose if present, else the `docker compose` plugin.
# Installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

file=docker-compose.yml
cluster_env=config/compose-cluster.env

if command -v docker-compose >/dev/null 2>&1; then
  compose=(docker-compose)
elif command -v docker >/dev/null 2>&1 && docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
else
  cat >&2 <<'MSG'
compose-check: neither `docker-compose` nor the `docker compose` plugin is available.
Install one of them, for example:
  Debian/Ubuntu:  sudo apt-get install -y docker-compose
  Docker Engine:  https://docs.docker.com/compose/install/ (docker-compose-plugin)
MSG
  exit 1
fi
version=$("${compose[@]}" version --short 2>/dev/null || echo '?')

# Default stack: one NATS server, the services, the example receiver.
"${compose[@]}" -f "$file" config -q
echo "$file is valid (${compose[*]} $version)"

# Cluster setup: every service of the profile must be there, with the services pointed at all three nodes.
cluster=$("${compose[@]}" -f "$file" --profile cluster --env-file "$cluster_env" config)
# (docker-compose v1 quotes numbers with ' and v2 with ", hence the patterns.)
for expected in "^  nats-2:" "^  nats-3:" "nats://nats:4222,nats://nats-2:4222,nats://nats-3:4222" "SWITCHYARD_STREAM_REPLICAS: ['\"]?3['\"]?$"; do
  if ! grep -qE -- "$expected" <<<"$cluster"; then
    echo "compose-check: the cluster setup ($cluster_env) lacks: $expected" >&2
    exit 1
  fi
done
echo "$file with --profile cluster --env-file $cluster_env is valid"
