import { createHash, timingSafeEqual } from "node:crypto";
import type { Metadata } from "@grpc/grpc-js";
import { ServiceError } from "./errors.js";

/**
 * Checks `authorization: Bearer <admin token>` on an admin gRPC call, in
 * constant time. Without a configured token the admin APIs refuse everything.
 */
export function requireAdmin(adminToken: string | undefined, metadata: Metadata): void {
  if (!adminToken) throw new ServiceError("UNAUTHENTICATED", "the admin API is disabled: set SWITCHYARD_ADMIN_TOKEN");
  const header = metadata.get("authorization")[0];
  const match = typeof header === "string" ? /^Bearer\s+(.+)$/i.exec(header.trim()) : null;
  if (!match?.[1]) throw new ServiceError("UNAUTHENTICATED", 'missing admin token: send "authorization: Bearer <token>"');
  if (!timingSafeEqual(digest(match[1]), digest(adminToken))) throw new ServiceError("UNAUTHENTICATED", "wrong admin token");
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}
