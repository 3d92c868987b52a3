/**
 * HTTP Basic credentials of a write key (user = key, empty password), as docs/contract.md §3.1
 * defines them and @switchyard/platform's basicAuthorization builds them. Kept here so the commands that
 * only call an API do not load the whole service platform (NATS, pino, zod, gRPC server) first.
 */
export function writeKeyAuthorization(writeKey: string): string {
  return `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`;
}
