#!/usr/bin/env bash
# Validates docker-compose.yml without starting anything (npm run compose:check).
# Uses the standalone docker-compose if present, else the `docker compose` plugin.
# Installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

file=docker-compose.yml

if command -v docker-compose >/dev/null 2>&1; then
  docker-compose -f "$file" config -q
  echo "$file is valid (docker-compose $(docker-compose version --short 2>/dev/null || echo '?'))"
elif command -v docker >/dev/null 2>&1 && docker compose version >/dev/null 2>&1; then
  docker compose -f "$file" config -q
  echo "$file is valid (docker compose $(docker compose version --short 2>/dev/null || echo '?'))"
else
  cat >&2 <<'MSG'
compose-check: neither `docker-compose` nor the `docker compose` plugin is available.
Install one of them, for example:
  Debian/Ubuntu:  sudo apt-get install -y docker-compose
  Docker Engine:  https://docs.docker.com/compose/install/ (docker-compose-plugin)
MSG
  exit 1
fi
