import type { IncomingMessage } from "node:http";

/** Where analytics.js is told to send: host (with any path prefix) and scheme. */
export interface ApiLocation {
  /** e.g. "events.example.com/v1"; analytics.js appends "/t", "/p", ..., "/b". */
  apiHost: string;
  protocol: "http" | "https";
}

/**
 * The API's location as browsers should reach it: `publicUrl` (INGEST_PUBLIC_URL) when set,
 * otherwise the request's Host header with this server's scheme. A spoofed Host only changes
 * where the spoofing client itself is told to send. Undefined when there is no usable Host.
 */
export function apiLocation(publicUrl: string | undefined, request: IncomingMessage, secure: boolean): ApiLocation | undefined {
  if (publicUrl !== undefined) {
    const url = new URL(publicUrl);
    const path = url.pathname.replace(/\/+$/, "");
    return { apiHost: `${url.host}${path}/v1`, protocol: url.protocol === "https:" ? "https" : "http" };
  }
  const host = request.headers.host;
  // Host names, IPv4 and bracketed IPv6 literals, optional port: nothing that could add a path.
  if (host === undefined || !/^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/.test(host)) return undefined;
  return { apiHost: `${host}/v1`, protocol: secure ? "https" : "http" };
}

/**
 * The settings analytics.js (@segment/analytics-next) loads from
 * `<cdnURL>/v1/projects/<write key>/settings`: only the "Segment.io" integration, pointed at this
 * API, so every call comes here and nothing is loaded from or sent to anywhere else (no other
 * destinations, no middleware, metrics sampling off).
 */
export function browserSettings(writeKey: string, location: ApiLocation): Record<string, unknown> {
  return {
    integrations: {
      "Segment.io": {
        apiKey: writeKey,
        apiHost: location.apiHost,
        protocol: location.protocol,
        unbundledIntegrations: [],
        addBundledMetadata: true,
        maybeBundledConfigIds: {},
      },
    },
    plan: {
      track: { __default: { enabled: true, integrations: {} } },
      identify: { __default: { enabled: true } },
      group: { __default: { enabled: true } },
    },
    edgeFunction: {},
    analyticsNextEnabled: true,
    middlewareSettings: {},
    enabledMiddleware: {},
    // analytics.js would otherwise report its own usage metrics to Segment.
    metrics: { sampleRate: 0 },
    legacyVideoPluginsEnabled: false,
    remotePlugins: [],
  };
}
