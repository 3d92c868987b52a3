// Container health check without curl: GETs a path of the service's ops
// endpoint and exits 0 on a 2xx answer, 1 otherwise (also after 3 s).
//
//   node scripts/healthcheck.mjs /healthz     (liveness, the Dockerfile's HEALTHCHECK)
//   node scripts/healthcheck.mjs /readyz      (readiness, docker-compose.yml)
//
// The port follows the service in $SERVICE and its <SERVICE>_OPS_PORT variable.

const OPS_PORTS = {
  ingest: ["INGEST_OPS_PORT", 9101],
  delivery: ["DELIVERY_OPS_PORT", 9102],
  "audience-sync": ["AUDIENCE_OPS_PORT", 9103],
  console: ["CONSOLE_OPS_PORT", 9105],
  insights: ["INSIGHTS_OPS_PORT", 9104],
};

const service = process.env.SERVICE ?? "";
const entry = OPS_PORTS[service];
if (!entry) {
  console.error(`healthcheck: SERVICE must be one of ${Object.keys(OPS_PORTS).join(", ")} (got "${service}")`);
  process.exit(1);
}
const [variable, defaultPort] = entry;
const port = process.env[variable] || defaultPort;
const path = process.argv[2] ?? "/healthz";

try {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(3_000) });
  if (!response.ok) console.error(`healthcheck: ${path} answered ${response.status} ${await response.text()}`);
  process.exit(response.ok ? 0 : 1);
} catch (error) {
  console.error(`healthcheck: ${path} unreachable: ${error instanceof Error ? error.message : error}`);
  process.exit(1);
}
