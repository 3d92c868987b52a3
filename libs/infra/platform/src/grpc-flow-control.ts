import type { Http2SecureServer, Http2Server, Http2Session } from "node:http2";
import type { Server } from "@grpc/grpc-js";

/**
 * The HTTP/2 flow-control windows a gRPC server gives its clients: how much a
 * client may send before it must wait for the server's WINDOW_UPDATE.
 *
 * Node's defaults are 64 KiB for each stream and for the whole connection. An
 * IngestBatch of 100 calls is about 60 KB, so with a few batches in flight on
 * one connection the client stalls for a WINDOW_UPDATE on nearly every
 * request, and both sides pay for the extra round trips, small reads and
 * frames: CPU on both ends that wider windows save.
 *
 * A stream window of 1 MiB takes the largest batch ingest accepts (500 KB of
 * JSON) without a stall; the connection window takes several at once. They
 * bound what a client may have in flight, not what the server allocates:
 * grpc-js reads each request as it arrives.
 */
export const STREAM_WINDOW_BYTES = 1024 * 1024;
export const CONNECTION_WINDOW_BYTES = 4 * 1024 * 1024;

type AnyHttp2Server = Http2Server | Http2SecureServer;

/**
 * Applies the windows above to every connection a bound grpc-js server
 * accepts from now on. grpc-js offers no server option for them (its client
 * has grpc-node.flow_control_window), so this reaches for the HTTP/2 servers
 * it keeps in a private map once bindAsync has called back. Returns false when
 * that map is not there (a grpc-js whose internals changed): the server then
 * works, only with Node's small windows. A test holds the pinned
 * grpc-js to it.
 */
export function widenFlowControlWindows(server: Server): boolean {
  const http2Servers = (server as unknown as { http2Servers?: unknown }).http2Servers;
  if (!(http2Servers instanceof Map) || http2Servers.size === 0) return false;
  for (const http2Server of http2Servers.keys() as IterableIterator<AnyHttp2Server>) {
    if (typeof http2Server.updateSettings !== "function") return false;
    // New sessions advertise the stream window in their SETTINGS; the connection window needs a WINDOW_UPDATE of its own.
    http2Server.updateSettings({ initialWindowSize: STREAM_WINDOW_BYTES });
    http2Server.on("session", (session: Http2Session) => session.setLocalWindowSize(CONNECTION_WINDOW_BYTES));
  }
  return true;
}
