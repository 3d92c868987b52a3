#!/usr/bin/env bash
# Validates docker-compose.yml without starting anything (npm run compose:check):
# the default stack, the cluster setup (profile "cluster" with its env file), and that the
# services behind the load balancer can be scaled (docker compose up --scale ingest=2 ...):
# they publish no host ports and have no container_name, and the lb service publishes their
# ports, each with a frontend in the load balancer's configuration.
# Uses the standalone docker-compose if present, else the `docker compose` plugin.
# Installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

file=docker-compose.yml
cluster_env=config/compose-cluster.env
lb_config=config/haproxy.cfg
# Services that may run as several replicas, and the host ports the lb service publishes for them.
scalable=(ingest delivery audience-sync insights)
lb_ports=(50051 8080 9101 50052 9102 50053 9103 50054 9104)

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

# Default stack: one NATS server, the services, the load balancer, the example receiver.
default=$("${compose[@]}" -f "$file" config)
echo "$file is valid (${compose[*]} $version)"

# Prints the lines of one service in the output of `config` (services at two spaces, their keys at four).
service_block() {
  awk -v name="$2" '
    /^[^ ]/ { in_services = ($0 == "services:"); current = ""; next }
    in_services && /^  [^ ]/ { current = $0; sub(/^  /, "", current); sub(/:.*$/, "", current); next }
    in_services && current == name { print }
  ' <<<"$1"
}

# Scaled setup: a second replica of a scalable service must not need a host port or a name of its own.
check_scalable() {
  local setup=$1 config=$2 service block port
  for service in "${scalable[@]}"; do
    block=$(service_block "$config" "$service")
    if [ -z "$block" ]; then
      echo "compose-check: $setup lacks the service $service" >&2
      exit 1
    fi
    if grep -qE '^    (ports|container_name):' <<<"$block"; then
      echo "compose-check: $setup: $service publishes ports or has a container_name, so it cannot be scaled (the lb service publishes its ports)" >&2
      exit 1
    fi
  done
  block=$(service_block "$config" lb)
  if [ -z "$block" ]; then
    echo "compose-check: $setup lacks the lb service" >&2
    exit 1
  fi
  for port in "${lb_ports[@]}"; do
    # v1 prints "- 50051:50051/tcp" (or quoted), v2 the long form with published: "50051" and target: 50051.
    if ! grep -qE -- "(- ['\"]?$port:$port(/tcp)?['\"]?$|published: ['\"]?$port['\"]?$)" <<<"$block"; then
      echo "compose-check: $setup: the lb service does not publish port $port" >&2
      exit 1
    fi
  done
}
check_scalable "$file" "$default"
for port in "${lb_ports[@]}"; do
  if ! grep -qE "^  bind :$port$" "$lb_config"; then
    echo "compose-check: $lb_config has no frontend for port $port" >&2
    exit 1
  fi
done
if command -v haproxy >/dev/null 2>&1; then
  haproxy -c -q -f "$lb_config"
  echo "$lb_config is valid ($(haproxy -v | head -n 1 | cut -d' ' -f1-3))"
fi
echo "$file can be scaled: ${scalable[*]} publish no ports; lb publishes ${lb_ports[*]}"

# Cluster setup: every service of the profile must be there, with the services pointed at all three nodes.
cluster=$("${compose[@]}" -f "$file" --profile cluster --env-file "$cluster_env" config)
# (docker-compose v1 quotes numbers with ' and v2 with ", hence the patterns.)
for expected in "^  nats-2:" "^  nats-3:" "nats://nats:4222,nats://nats-2:4222,nats://nats-3:4222" "SWITCHYARD_STREAM_REPLICAS: ['\"]?3['\"]?$"; do
  if ! grep -qE -- "$expected" <<<"$cluster"; then
    echo "compose-check: the cluster setup ($cluster_env) lacks: $expected" >&2
    exit 1
  fi
done
check_scalable "the cluster setup" "$cluster"
echo "$file with --profile cluster --env-file $cluster_env is valid, and can be scaled"
