import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/** The lowest port handed out by freePort when the ephemeral range leaves room below it. */
const LOWEST_PORT = 10_000;
/** Picks tried below the ephemeral range before falling back to one the kernel chooses. */
const TRIES = 50;

/**
 * A TCP port that was free a moment ago on 127.0.0.1, for a child process to
 * bind later. Picked at random below the kernel's ephemeral range: a port from
 * that range (what listening on port 0 gives) can be taken before the child
 * binds it by any test that listens on port 0 meanwhile, and tests do so all
 * the time; below it, only another freePort pick can, one chance in thousands.
 * Prefer starting a child on port 0 and reading the port it bound when the
 * child reports it.
 */
export async function freePort(): Promise<number> {
  const ephemeralLow = ephemeralRangeStart();
  if (ephemeralLow - LOWEST_PORT > 1_000) {
    for (let attempt = 0; attempt < TRIES; attempt++) {
      const port = LOWEST_PORT + Math.floor(Math.random() * (ephemeralLow - LOWEST_PORT));
      if ((await listenOnce(port)) !== undefined) return port;
    }
  }
  const port = await listenOnce(0);
  if (port === undefined) throw new Error("no free TCP port on 127.0.0.1");
  return port;
}

/** The first port of the kernel's ephemeral range (Linux), or the IANA one elsewhere. */
function ephemeralRangeStart(): number {
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 49_152;
  } catch {
    return 49_152;
  }
}

/** Listens on `port` and closes again: the port bound, or undefined when it was taken. */
function listenOnce(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(undefined));
    server.listen(port, "127.0.0.1", () => {
      const address = server.address();
      const bound = typeof address === "object" && address ? address.port : undefined;
      server.close(() => resolve(bound));
    });
  });
}
