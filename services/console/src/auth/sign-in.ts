import { createHash, timingSafeEqual } from "node:crypto";
import { verifyPassword, type PasswordHash } from "@switchyard/platform";

/**
 * What signs a person in: the admin token, or the console password when one is configured
 * (SWITCHYARD_CONSOLE_PASSWORD_HASH). Both are compared in constant time; the password through
 * scrypt, whose cost also slows guessing.
 */
export class SignInCheck {
  constructor(
    private readonly adminToken: string,
    private readonly passwordHash: PasswordHash | undefined,
  ) {}

  async accepts(secret: string): Promise<boolean> {
    if (secret.length === 0 || secret.length > 1024) return false;
    const tokenMatches = timingSafeEqual(digest(secret), digest(this.adminToken));
    // The password is checked whatever the token comparison said, so the answer takes as long either way.
    const passwordMatches = this.passwordHash ? await verifyPassword(secret, this.passwordHash) : false;
    return tokenMatches || passwordMatches;
  }
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

/**
 * Failed sign-ins per client address (behind a trusted proxy, the forwarded one: see
 * TrustedProxies): after `maxFailures` within `windowMs` that address is refused (429) until the
 * window has passed, so the token or password cannot be guessed at speed.
 */
export class SignInLimiter {
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly maxFailures = 10,
    private readonly windowMs = 5 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Milliseconds until `address` may try again, or 0 when it may now. */
  retryAfterMs(address: string): number {
    const recent = this.recent(address);
    if (recent.length < this.maxFailures) return 0;
    return Math.max(1, recent[0]! + this.windowMs - this.now());
  }

  failed(address: string): void {
    const recent = this.recent(address);
    recent.push(this.now());
    this.failures.set(address, recent);
    // Addresses with nothing recent are dropped as they are met, and all of them now and then.
    if (this.failures.size > 10_000)
      for (const key of [...this.failures.keys()]) if (this.recent(key).length === 0) this.failures.delete(key);
  }

  succeeded(address: string): void {
    this.failures.delete(address);
  }

  private recent(address: string): number[] {
    const since = this.now() - this.windowMs;
    const kept = (this.failures.get(address) ?? []).filter((at) => at > since);
    if (kept.length === 0) this.failures.delete(address);
    return kept;
  }
}
