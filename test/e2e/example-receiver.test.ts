import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { basicAuthorization } from "@switchyard/workspace";
import { freePort, waitFor } from "@switchyard/testkit";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startStack, type Stack } from "../helpers/stack.js";

/**
 * examples/receiver/receiver.mjs (the receiver docker-compose.yml runs) against
 * the real delivery service: it prints the call it got and finds the signature
 * valid; with the wrong secret it finds it invalid and refuses the request.
 */

const WRITE_KEY = "wk_e2e_example_receiver_01";
const RECEIVER = fileURLToPath(new URL("../../examples/receiver/receiver.mjs", import.meta.url));

interface Receiver {
  child: ChildProcess;
  port: number;
  output(): string;
}

async function startReceiver(secret: string): Promise<Receiver> {
  const port = await freePort();
  const child = spawn(process.execPath, [RECEIVER], { env: { PATH: process.env.PATH ?? "", PORT: String(port), WEBHOOK_SECRET: secret } });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  await waitFor("the example receiver to listen", () => output.includes("receiver listening"));
  return { child, port, output: () => output };
}

let good: Receiver;
let wrong: Receiver;
let stack: Stack;

beforeAll(async () => {
  good = await startReceiver("example-shared-secret");
  wrong = await startReceiver("not-the-secret");
  const destination = (id: string, port: number) => ({
    id,
    settings: { webhooks: [{ url: `http://127.0.0.1:${port}/webhook` }], sharedSecret: "example-shared-secret" },
  });
  stack = await startStack({
    workspace: {
      sources: [{ id: "backend", writeKeys: [WRITE_KEY] }],
      destinations: [destination("good", good.port), destination("wrong", wrong.port)],
      connections: [
        { sourceId: "backend", destinationId: "good" },
        { sourceId: "backend", destinationId: "wrong" },
      ],
    },
  });
});

afterAll(async () => {
  await stack?.dispose();
  for (const receiver of [good, wrong]) receiver?.child.kill();
});

it("prints each call with its signature checked", async () => {
  const response = await fetch(`${stack.httpUrl}/v1/track`, {
    method: "POST",
    headers: { Authorization: basicAuthorization(WRITE_KEY), "Content-Type": "application/json" },
    body: JSON.stringify({ userId: "u1", event: "Signed Up", messageId: "example-receiver-1" }),
  });
  expect(response.status).toBe(200);

  const lineOf = (receiver: Receiver) =>
    waitFor("the call in the receiver's output", () =>
      receiver
        .output()
        .split("\n")
        .find((line) => line.includes('"example-receiver-1"')),
    );
  const printed = JSON.parse(await lineOf(good));
  expect(printed).toMatchObject({ method: "POST", path: "/webhook", signature: "valid" });
  expect(printed.call).toMatchObject({ type: "track", event: "Signed Up", userId: "u1", messageId: "example-receiver-1" });

  expect(JSON.parse(await lineOf(wrong))).toMatchObject({ signature: "invalid" });
  // Refused with 401: a permanent failure, so delivery dead-letters it rather than retrying.
  await stack.settled();
  const deadLetters = await stack.jsm.streams.info(stack.names.deadStream);
  expect(deadLetters.state.messages).toBe(1);
});
