/**
 * The sender thread (see SenderThread): a WebhookSender of its own, sending what the main thread
 * asks and answering with each result.
 */
import { parentPort, workerData } from "node:worker_threads";
import { AddressPolicy } from "./address-policy.js";
import type { SenderThreadSettings, ThreadReply, ThreadRequest, ThreadResult } from "./sender-thread.js";
import { WebhookSender, type SendResult } from "./webhook-sender.js";

const port = parentPort!;
const { allowlist, ...options } = workerData as SenderThreadSettings;
const sender = new WebhookSender({ ...options, addressPolicy: AddressPolicy.fromList(allowlist.join(",")) });

port.on("message", (request: ThreadRequest) => {
  if ("close" in request) {
    void sender.close().finally(() => port.postMessage({ closed: true } satisfies ThreadReply));
    return;
  }
  const body = Buffer.from(request.body.buffer, request.body.byteOffset, request.body.byteLength);
  void sender.send(request.url, request.headers, body, request.poolKey, request.method).then((result) => {
    const { reply, transfer } = replyOf(request.id, result);
    port.postMessage(reply, transfer);
  });
});

/**
 * The result with its Buffers copied into buffers of their own, handed over: undici's header
 * Buffers are views of its whole read buffer, which a clone would copy for every answer.
 */
function replyOf(id: number, { responseHeaders, responseBody, ...rest }: SendResult): { reply: ThreadReply; transfer: ArrayBuffer[] } {
  const transfer: ArrayBuffer[] = [];
  const own = (bytes: Buffer): Uint8Array => {
    const copy = new Uint8Array(bytes);
    transfer.push(copy.buffer);
    return copy;
  };
  const result: ThreadResult = { ...rest, responseHeaders: responseHeaders?.map(own), responseBody: responseBody && own(responseBody) };
  return { reply: { id, result }, transfer };
}
