// Runs Switchyard locally: `npm ci && npm start`.
//
//  1. Builds every service (scripts/build.mjs).
//  2. Finds NATS: $NATS_URL if set; else a server answering at
//     nats://127.0.0.1:$SWITCHYARD_LOCAL_NATS_PORT (default 4222); else starts
//     `nats-server -js -a 127.0.0.1 -p <port> -sd .data/nats` itself (.data: $SWITCHYARD_DATA_DIR).
//  3. Starts each built service as `node services/<name>/dist/main.js`, with
//     NATS_URL set and SWITCHYARD_WORKSPACE_FILE defaulting to
//     config/workspace.example.json, and SWITCHYARD_ADMIN_TOKEN defaulting to the token kept in
//     .data/admin-token (made on the first run). The console gets the other services' gRPC
//     addresses (CONSOLE_*_ADDRESS) from their port variables. Output lines are prefixed with the
//     service name (pino JSON is shown compactly on a terminal, unchanged otherwise).
//  4. Ctrl-C / SIGTERM: SIGTERM to every service, wait (then SIGKILL), stop the
//     nats-server it started, exit 0. A service that exits on its own stops
//     everything with exit code 1.
//
// Children run in their own process groups, so a Ctrl-C in the terminal reaches
// only this script, which then stops services before the NATS server they drain to.

import { randomBytes } from "node:crypto";
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import readline from "node:readline";
import { buildServices, ROOT } from "./build.mjs";

/** Node options a service runs with: BRISK_SERVICE_NODE_OPTIONS in libs/infra/platform/src/heap-tuning.ts says why. */
const SERVICE_NODE_OPTIONS = { ingest: "--max-semi-space-size=64", delivery: "--max-semi-space-size=64" };

const DEFAULT_WORKSPACE_FILE = "config/workspace.example.json";
const NATS_READY_DEADLINE_MS = 15_000;
const NATS_STOP_DEADLINE_MS = 5_000;
const READY_REPORT_DEADLINE_MS = 30_000;
// Services finish in-flight work within SHUTDOWN_GRACE_MS (10 s by default); allow a margin on top.
const SERVICE_STOP_DEADLINE_MS = (Number(process.env.SHUTDOWN_GRACE_MS) || 10_000) + 10_000;

const env = process.env;
const LOOPBACK_CIDRS = "127.0.0.0/8,::1/128";
// The data folder: the nats-server store this script starts and the local admin token.
const dataDir = path.resolve(ROOT, env.SWITCHYARD_DATA_DIR || ".data");
const shownDataDir = path.relative(ROOT, dataDir).startsWith("..") ? dataDir : path.relative(ROOT, dataDir) || ".";
const localNatsPort = parsePort(env.SWITCHYARD_LOCAL_NATS_PORT ?? "4222", "SWITCHYARD_LOCAL_NATS_PORT");
const pretty = process.stdout.isTTY === true;

/** @type {{ name: string, child: import("node:child_process").ChildProcess, exited: Promise<void>, running: boolean, ready: boolean }[]} */
const services = [];
/** @type {{ name: string, child: import("node:child_process").ChildProcess, exited: Promise<void>, running: boolean } | undefined} */
let natsServer;
let stopping = false;
let summaryPrinted = false;

process.on("SIGINT", () => requestStop("SIGINT"));
process.on("SIGTERM", () => requestStop("SIGTERM"));
process.on("SIGHUP", () => requestStop("SIGHUP"));
// `npm start` runs this script under a shell; when npm is killed (SIGTERM to npm
// alone), the shell dies and this script is re-parented. Treat that as a stop request.
const parentPid = process.ppid;
const parentWatch = setInterval(() => {
  if (process.ppid === parentPid) return;
  clearInterval(parentWatch);
  requestStop("parent process exited");
}, 1_000).unref();
// Last resort (a bug in this script): never leave children behind.
process.on("exit", () => {
  for (const proc of [...services, natsServer]) if (proc?.running) proc.child.kill("SIGKILL");
});

main().catch((error) => {
  console.error(`start: ${error?.message ?? error}`);
  void stopAll(1);
});

async function main() {
  say("building services");
  const built = await buildServices();
  if (built.length === 0) return fail("no services to start (no services/*/src/main.ts)");
  if (stopping) return;

  const natsUrl = await findOrStartNats();
  if (stopping) return;

  const workspaceFile = env.SWITCHYARD_WORKSPACE_FILE ?? DEFAULT_WORKSPACE_FILE;
  const adminToken = env.SWITCHYARD_ADMIN_TOKEN ?? localAdminToken();
  // Delivery refuses private and loopback receivers (SSRF protection); a local run allows loopback so the
  // example destination (http://127.0.0.1:9000) and receivers on this machine work. A user's own setting wins.
  const allowedCidrs = env.DELIVERY_ALLOWED_CIDRS ?? LOOPBACK_CIDRS;
  const width = Math.max(...built.map((s) => s.name.length), 4);
  for (const { name, outfile } of built) {
    startService(
      name,
      outfile,
      {
        NATS_URL: natsUrl,
        SWITCHYARD_WORKSPACE_FILE: workspaceFile,
        SWITCHYARD_ADMIN_TOKEN: adminToken,
        DELIVERY_ALLOWED_CIDRS: allowedCidrs,
        ...(name === "console" ? consoleAddresses() : {}),
        ...(SERVICE_NODE_OPTIONS[name] ? { NODE_OPTIONS: [env.NODE_OPTIONS, SERVICE_NODE_OPTIONS[name]].filter(Boolean).join(" ") } : {}),
      },
      width,
    );
  }
  say(`started ${built.map((s) => s.name).join(", ")} (NATS ${natsUrl}, workspace ${workspaceFile})`);

  setTimeout(() => {
    const waiting = services.filter((s) => s.running && !s.ready).map((s) => s.name);
    if (!stopping && waiting.length > 0) {
      say(`still waiting for ${waiting.join(", ")} to report ready`);
      printSummary(workspaceFile);
    }
  }, READY_REPORT_DEADLINE_MS).unref();
}

/**
 * Where the console finds the gRPC services this script starts: at the ports their variables
 * set, or their defaults. An address the user set wins.
 */
function consoleAddresses() {
  const at = (variable, port) => `127.0.0.1:${env[variable] || port}`;
  return {
    CONSOLE_DELIVERY_ADDRESS: env.CONSOLE_DELIVERY_ADDRESS ?? at("DELIVERY_GRPC_PORT", 50052),
    CONSOLE_AUDIENCE_ADDRESS: env.CONSOLE_AUDIENCE_ADDRESS ?? at("AUDIENCE_GRPC_PORT", 50053),
    CONSOLE_INSIGHTS_ADDRESS: env.CONSOLE_INSIGHTS_ADDRESS ?? at("INSIGHTS_GRPC_PORT", 50054),
  };
}

/**
 * A local run's admin token unless the user set SWITCHYARD_ADMIN_TOKEN: made once, kept in the
 * data folder (.data/admin-token, readable by this user only) so that it stays the same across
 * restarts and an exported SWITCHYARD_ADMIN_TOKEN keeps working. It is printed at every start.
 */
function localAdminToken() {
  const file = path.join(dataDir, "admin-token");
  try {
    const kept = readFileSync(file, "utf8").trim();
    if (kept.length >= 16) return kept;
  } catch (error) {
    if (error?.code !== "ENOENT") throw error;
  }
  const token = `local-${randomBytes(16).toString("hex")}`;
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return token;
}

// ---------------------------------------------------------------------------
// NATS

async function findOrStartNats() {
  if (env.NATS_URL) {
    say(`using NATS_URL=${env.NATS_URL}`);
    return env.NATS_URL;
  }
  const localUrl = `nats://127.0.0.1:${localNatsPort}`;
  if (await natsAnswers("127.0.0.1", localNatsPort)) {
    say(`using the NATS server at ${localUrl}`);
    return localUrl;
  }
  say(`no NATS server at ${localUrl}; starting nats-server (JetStream store in ${path.join(shownDataDir, "nats")})`);
  await startNatsServer(localNatsPort);
  return localUrl;
}

/** True when a NATS server greets a TCP connection with its INFO line. */
function natsAnswers(host, port, timeoutMs = 1_500) {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    let greeting = "";
    const done = (answer) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.setEncoding("utf8");
    socket.on("data", (chunk) => {
      greeting += chunk;
      if (greeting.length >= 4 || greeting.includes("\n")) done(greeting.startsWith("INFO"));
    });
    socket.on("error", () => done(false));
    socket.on("end", () => done(greeting.startsWith("INFO")));
  });
}

function startNatsServer(port) {
  mkdirSync(path.join(dataDir, "nats"), { recursive: true });
  const args = ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", path.join(dataDir, "nats")];
  const child = spawn("nats-server", args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], detached: true });
  const proc = { name: "nats-server", child, running: true, exited: undefined };
  proc.exited = new Promise((resolve) => child.once("exit", () => ((proc.running = false), resolve())));
  natsServer = proc;

  return new Promise((resolve, reject) => {
    let ready = false;
    const timer = setTimeout(() => {
      reject(new Error(`nats-server did not report "Server is ready" within ${NATS_READY_DEADLINE_MS / 1000} s`));
    }, NATS_READY_DEADLINE_MS);
    const onLine = (line) => {
      console.log(`${"nats".padEnd(4)} | ${line}`);
      if (!ready && line.includes("Server is ready")) {
        ready = true;
        clearTimeout(timer);
        resolve();
      }
    };
    readline.createInterface({ input: child.stdout }).on("line", onLine);
    readline.createInterface({ input: child.stderr }).on("line", onLine);

    child.once("error", (error) => {
      clearTimeout(timer);
      proc.running = false;
      natsServer = undefined;
      if (error.code === "ENOENT") {
        console.error(
          [
            "",
            `start: no NATS server answers at nats://127.0.0.1:${port}, and nats-server is not on PATH.`,
            "Do one of these, then run `npm start` again:",
            "  - install it (Debian/Ubuntu):  sudo apt-get install -y nats-server",
            "  - download a release binary and put it on PATH:  https://github.com/nats-io/nats-server/releases",
            "  - use a server you already run:  NATS_URL=nats://host:4222 npm start",
            "",
          ].join("\n"),
        );
        process.exit(1);
      }
      reject(new Error(`could not start nats-server: ${error.message}`));
    });
    child.once("exit", (code, signal) => {
      if (!ready) {
        clearTimeout(timer);
        reject(new Error(`nats-server exited before it was ready (${describeExit(code, signal)}); see its output above`));
      } else if (!stopping) {
        say(`nats-server exited unexpectedly (${describeExit(code, signal)}); stopping`);
        void stopAll(1);
      }
    });
  });
}

// ---------------------------------------------------------------------------
// Services

function startService(name, outfile, extraEnv, width) {
  const child = spawn(process.execPath, ["--enable-source-maps", path.relative(ROOT, outfile)], {
    cwd: ROOT,
    env: { ...env, ...extraEnv },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  const proc = { name, child, running: true, ready: false, exited: undefined, adminToken: extraEnv.SWITCHYARD_ADMIN_TOKEN };
  proc.exited = new Promise((resolve) => child.once("close", resolve));
  services.push(proc);

  const prefix = `${name.padEnd(width)} | `;
  const onLine = (stream) => (line) => {
    const entry = parseLogLine(line);
    if (entry && !proc.ready && typeof entry.msg === "string" && /\bready$/.test(entry.msg)) {
      proc.ready = true;
      if (entry.grpcPort !== undefined) proc.grpcPort = entry.grpcPort;
      if (entry.httpPort !== undefined) proc.httpPort = entry.httpPort;
      if (entry.opsPort !== undefined) proc.opsPort = entry.opsPort;
      setImmediate(() => {
        if (services.every((s) => s.ready) && !stopping) printSummary(extraEnv.SWITCHYARD_WORKSPACE_FILE);
      });
    }
    const text = pretty && entry ? formatEntry(entry) : line;
    const lines = text.split("\n").map((part) => prefix + part + "\n");
    stream.write(lines.join(""));
  };
  readline.createInterface({ input: child.stdout }).on("line", onLine(process.stdout));
  readline.createInterface({ input: child.stderr }).on("line", onLine(process.stderr));

  child.once("error", (error) => say(`${name}: could not start: ${error.message}`));
  child.once("exit", (code, signal) => {
    proc.running = false;
    if (!stopping) {
      say(`${name} exited unexpectedly (${describeExit(code, signal)}); stopping everything`);
      void stopAll(1);
    } else if (code !== 0) {
      say(`${name} stopped (${describeExit(code, signal)})`);
    }
  });
}

function extraEnvAdminToken(proc) {
  return env.SWITCHYARD_ADMIN_TOKEN
    ? "(SWITCHYARD_ADMIN_TOKEN)"
    : `${proc.adminToken}  (kept in ${path.join(shownDataDir, "admin-token")})`;
}

function printSummary(workspaceFile) {
  if (summaryPrinted) return;
  summaryPrinted = true;
  const ingest = services.find((s) => s.name === "ingest");
  const lines = ["", "Switchyard is running. Press Ctrl-C to stop."];
  if (ingest) {
    const grpcPort = ingest.grpcPort ?? env.INGEST_GRPC_PORT ?? 50051;
    const httpPort = ingest.httpPort ?? env.INGEST_HTTP_PORT ?? 8080;
    const writeKey = workspaceFile === DEFAULT_WORKSPACE_FILE ? "wk_example_web_0123456789" : "<write key>";
    lines.push(
      `  ingest gRPC  127.0.0.1:${grpcPort}   (switchyard.v1.IngestService, reflection on)`,
      `  ingest HTTP  http://127.0.0.1:${httpPort}   (Segment API: /v1/track, /v1/identify, /v1/batch, ...)`,
      `  try: curl -u ${writeKey}: -H 'Content-Type: application/json' -d '{"userId":"u1","event":"Signed Up"}' http://127.0.0.1:${httpPort}/v1/track`,
    );
  }
  const delivery = services.find((s) => s.name === "delivery");
  if (delivery) {
    const grpcPort = delivery.grpcPort ?? env.DELIVERY_GRPC_PORT ?? 50052;
    lines.push(
      `  delivery gRPC 127.0.0.1:${grpcPort}  (switchyard.v1.ConfigService, switchyard.v1.DeliveryService)`,
      `  admin token  ${extraEnvAdminToken(delivery)}`,
      "               for the config, delivery, audience, deletion and insights APIs (--token, or SWITCHYARD_ADMIN_TOKEN for the CLI)",
    );
  }
  const audienceSync = services.find((s) => s.name === "audience-sync");
  if (audienceSync) {
    const grpcPort = audienceSync.grpcPort ?? env.AUDIENCE_GRPC_PORT ?? 50053;
    lines.push(`  audience-sync gRPC 127.0.0.1:${grpcPort}  (switchyard.v1.AudienceService, switchyard.v1.DeletionService)`);
  }
  const consoleService = services.find((s) => s.name === "console");
  if (consoleService) {
    const httpPort = consoleService.httpPort ?? env.CONSOLE_HTTP_PORT ?? 8090;
    lines.push(`  console      http://127.0.0.1:${httpPort}   (the web interface: sign in with the admin token)`);
  }
  const insights = services.find((s) => s.name === "insights");
  if (insights) {
    const grpcPort = insights.grpcPort ?? env.INSIGHTS_GRPC_PORT ?? 50054;
    lines.push(
      `  insights gRPC 127.0.0.1:${grpcPort}  (switchyard.v1.InsightsService: npx switchyard schema <source>, npx switchyard usage)`,
    );
  }
  const opsPorts = services.filter((s) => s.opsPort !== undefined).map((s) => `${s.name} http://127.0.0.1:${s.opsPort}`);
  if (opsPorts.length > 0) lines.push(`  ops endpoints (/healthz, /readyz, /metrics): ${opsPorts.join(", ")}`);
  lines.push("");
  console.log(lines.join("\n"));
}

// ---------------------------------------------------------------------------
// Stopping

function requestStop(signal) {
  if (stopping) {
    say(`${signal} again; already stopping (services get up to ${SERVICE_STOP_DEADLINE_MS / 1000} s)`);
    return;
  }
  say(`${signal}: stopping`);
  void stopAll(0);
}

async function stopAll(exitCode) {
  if (stopping) return;
  stopping = true;

  await stopProcesses(
    services.filter((s) => s.running),
    SERVICE_STOP_DEADLINE_MS,
  );
  if (natsServer?.running) {
    say("stopping nats-server");
    await stopProcesses([natsServer], NATS_STOP_DEADLINE_MS);
  }
  say(exitCode === 0 ? "stopped" : "stopped after a failure");
  process.exit(exitCode);
}

/** SIGTERM each process, wait for all until the deadline, then SIGKILL the rest. */
async function stopProcesses(procs, deadlineMs) {
  if (procs.length === 0) return;
  for (const proc of procs) signalProcess(proc, "SIGTERM");
  let timer;
  const deadline = new Promise((resolve) => (timer = setTimeout(resolve, deadlineMs, "deadline")));
  const outcome = await Promise.race([Promise.all(procs.map((p) => p.exited)), deadline]);
  clearTimeout(timer);
  if (outcome === "deadline") {
    for (const proc of procs.filter((p) => p.running)) {
      say(`${proc.name} did not stop within ${deadlineMs / 1000} s; killing it`);
      signalProcess(proc, "SIGKILL");
    }
    await Promise.all(procs.map((p) => p.exited));
  }
}

function signalProcess(proc, signal) {
  try {
    proc.child.kill(signal);
  } catch {
    // already gone
  }
}

// ---------------------------------------------------------------------------
// Helpers

function parseLogLine(line) {
  if (!line.startsWith("{")) return undefined;
  try {
    const entry = JSON.parse(line);
    return entry && typeof entry === "object" && !Array.isArray(entry) ? entry : undefined;
  } catch {
    return undefined;
  }
}

const OMITTED_FIELDS = new Set(["level", "time", "msg", "service", "name", "pid", "hostname"]);

/** `12:00:00.123 INFO  ingest ready grpcPort=50051 ...`, with an error's stack on following lines. */
function formatEntry(entry) {
  const time = typeof entry.time === "string" ? entry.time.slice(11, 23) : "";
  const level = `${entry.level ?? ""}`.toUpperCase().padEnd(5);
  const fields = Object.entries(entry)
    .filter(([key]) => !OMITTED_FIELDS.has(key) && key !== "err")
    .map(([key, value]) => `${key}=${typeof value === "string" && /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value)}`);
  let text = [time, level, entry.msg ?? "", ...fields].filter(Boolean).join(" ");
  if (entry.err) text += "\n" + (entry.err.stack ?? JSON.stringify(entry.err));
  return text;
}

function describeExit(code, signal) {
  return signal ? `signal ${signal}` : `exit code ${code}`;
}

function parsePort(value, variable) {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    console.error(`start: ${variable} must be a port number (1-65535), got "${value}"`);
    process.exit(1);
  }
  return port;
}

function say(message) {
  console.log(`start: ${message}`);
}

function fail(message) {
  console.error(`start: ${message}`);
  process.exit(1);
}
