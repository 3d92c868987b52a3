import { createHash, timingSafeEqual } from "node:crypto";
import type { Metadata } from "@grpc/grpc-js";

/**
 * Why an admin gRPC call is refused (the UNAUTHENTICATED message), or
 * undefined when it carries `authorization: Bearer <admin token>`. Compared
 * in constant time. Without a configured token the admin APIs refuse everything.
 * startGrpcServer checks this once for every method of a service registered
 * with `auth: "admin"`.
 */
export function adminAuthFailure(adminToken: string | undefined, metadata: Metadata): string | undefined {
  if (!adminToken) return "the admin API is disabled: set SWITCHYARD_ADMIN_TOKEN";
  const header = metadata.get("authorization")[0];
  const match = typeof header === "string" ? /^Bearer\s+(.+)$/i.exec(header.trim()) : null;
  if (!match?.[1]) return 'missing admin token: send "authorization: Bearer <token>"';
  if (!timingSafeEqual(digest(match[1]), digest(adminToken))) return "wrong admin token";
  return undefined;
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}
