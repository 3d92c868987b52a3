// An example webhook receiver: prints every call Switchyard delivers, one
// JSON line each, and checks its X-Signature. No dependencies: node:http and
// node:crypto only.
//
//   node examples/receiver/receiver.mjs
//
// Settings (environment):
//   PORT            port to listen on (default 9000)
//   WEBHOOK_SECRET  the destination's sharedSecret (default "example-shared-secret",
//                   as in config/workspace.example.json); empty: signatures are not checked
//
// X-Signature is the lowercase hex HMAC-SHA1 of the request body, keyed with
// the shared secret. A request with a missing or wrong signature is answered
// 401 (Switchyard treats that as a permanent failure and dead-letters the call).

import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";

const port = Number(process.env.PORT ?? 9000);
const secret = process.env.WEBHOOK_SECRET ?? "example-shared-secret";

/** Compares in constant time, so the answer's timing tells nothing about the expected signature. */
function signatureMatches(body, header) {
  if (typeof header !== "string") return false;
  const expected = Buffer.from(createHmac("sha1", secret).update(body).digest("hex"), "utf8");
  const given = Buffer.from(header, "utf8");
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const server = createServer((request, response) => {
  const chunks = [];
  request.on("data", (chunk) => chunks.push(chunk));
  request.on("end", () => {
    const body = Buffer.concat(chunks);
    const signature = secret ? (signatureMatches(body, request.headers["x-signature"]) ? "valid" : "invalid") : "not checked";
    let call;
    try {
      call = JSON.parse(body.toString("utf8"));
    } catch {
      call = body.toString("utf8");
    }
    console.log(JSON.stringify({ at: new Date().toISOString(), method: request.method, path: request.url, signature, call }));
    const ok = signature !== "invalid";
    response.writeHead(ok ? 200 : 401, { "Content-Type": "application/json" });
    response.end(JSON.stringify(ok ? { received: true } : { error: "bad signature" }));
  });
});

server.listen(port, () => console.log(`receiver listening on :${port} (signatures ${secret ? "checked" : "not checked"})`));
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => server.close(() => process.exit(0)));
