import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** One signed-in browser. */
export interface Session {
  /** Sent by the page in the X-CSRF-Token header of every state-changing request. */
  readonly csrfToken: string;
  readonly expiresAt: number;
}

/** Most sessions kept at once; past it the oldest goes (a flood of sign-ins cannot grow memory). */
const MAX_SESSIONS = 10_000;

/**
 * Sessions in this process's memory: the cookie holds a random id, the store only its SHA-256
 * digest (a memory dump shows no usable id). A restart signs everyone out, which an admin tool
 * can afford; several console replicas need sticky sessions (docs/console.md).
 */
export class SessionStore {
  private readonly sessions = new Map<string, Session>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly maxAgeMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.sweeper = setInterval(() => this.sweep(), 60_000);
    this.sweeper.unref();
  }

  /** A new session; returns the id for the cookie (shown nowhere else) and the session. */
  create(): { id: string; session: Session } {
    if (this.sessions.size >= MAX_SESSIONS) {
      const oldest = this.sessions.keys().next().value;
      if (oldest !== undefined) this.sessions.delete(oldest);
    }
    const id = randomBytes(32).toString("base64url");
    const session: Session = { csrfToken: randomBytes(32).toString("base64url"), expiresAt: this.now() + this.maxAgeMs };
    this.sessions.set(key(id), session);
    return { id, session };
  }

  /** The live session of a cookie value, if any. */
  get(id: string | undefined): Session | undefined {
    if (!id) return undefined;
    const stored = key(id);
    const session = this.sessions.get(stored);
    if (!session) return undefined;
    if (session.expiresAt <= this.now()) {
      this.sessions.delete(stored);
      return undefined;
    }
    return session;
  }

  delete(id: string | undefined): void {
    if (id) this.sessions.delete(key(id));
  }

  close(): void {
    clearInterval(this.sweeper);
    this.sessions.clear();
  }

  private sweep(): void {
    const now = this.now();
    for (const [key, session] of this.sessions) if (session.expiresAt <= now) this.sessions.delete(key);
  }
}

/** Whether a request's CSRF header matches the session's token, compared in constant time. */
export function csrfTokenMatches(session: Session, header: string | undefined): boolean {
  if (!header) return false;
  return timingSafeEqual(digest(header), digest(session.csrfToken));
}

/** The map key of a session id: its digest, as text. */
function key(id: string): string {
  return digest(id).toString("base64url");
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}
