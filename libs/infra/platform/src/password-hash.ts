import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";

/**
 * Password hashes as the console's SWITCHYARD_CONSOLE_PASSWORD_HASH holds them:
 * `scrypt:<N>:<r>:<p>:<salt>:<key>`, salt and key base64url. scrypt is memory-hard, so a leaked
 * hash is costly to guess at; `:` separates the parts because `$` needs escaping in shells and
 * docker-compose files. `switchyard hash-password` makes one.
 */
export interface PasswordHash {
  N: number;
  r: number;
  p: number;
  salt: Buffer;
  key: Buffer;
}

/** scrypt's cost settings for new hashes: costly enough to slow guessing, cheap enough for a sign-in (16 MB of memory). */
const DEFAULT_COST = { N: 16_384, r: 8, p: 1 } as const;
const SALT_BYTES = 16;
const KEY_BYTES = 32;
const HASH_PATTERN = /^scrypt:(\d+):(\d+):(\d+):([A-Za-z0-9_-]{16,}):([A-Za-z0-9_-]{32,})$/;
/** The format's rule, as an error message states it. */
export const PASSWORD_HASH_RULE = "must be scrypt:<N>:<r>:<p>:<salt>:<key> (base64url salt and key), as `switchyard hash-password` prints";

/** Parses a hash, or throws an Error stating the rule. */
export function parsePasswordHash(text: string): PasswordHash {
  const match = HASH_PATTERN.exec(text.trim());
  if (!match) throw new Error(PASSWORD_HASH_RULE);
  const [N, r, p] = [Number(match[1]), Number(match[2]), Number(match[3])];
  // N a power of two above 1 (scrypt's rule); bounds keep a typo from making each sign-in take minutes.
  if (N < 2 || N > 2 ** 20 || (N & (N - 1)) !== 0) throw new Error("N must be a power of two from 2 to 1048576");
  if (r < 1 || r > 32 || p < 1 || p > 16) throw new Error("r must be 1-32 and p 1-16");
  return { N, r, p, salt: Buffer.from(match[4]!, "base64url"), key: Buffer.from(match[5]!, "base64url") };
}

/** A new hash of `password`, with a random salt. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, KEY_BYTES, DEFAULT_COST);
  const { N, r, p } = DEFAULT_COST;
  return `scrypt:${N}:${r}:${p}:${salt.toString("base64url")}:${key.toString("base64url")}`;
}

/** Whether `password` matches `hash`, compared in constant time. */
export async function verifyPassword(password: string, hash: PasswordHash): Promise<boolean> {
  const key = await derive(password, hash.salt, hash.key.length, { N: hash.N, r: hash.r, p: hash.p });
  return timingSafeEqual(key, hash.key);
}

function derive(password: string, salt: Buffer, length: number, cost: { N: number; r: number; p: number }): Promise<Buffer> {
  // maxmem: scrypt needs 128 * N * r bytes; the default cap (32 MB) refuses the larger allowed settings.
  const options: ScryptOptions = { ...cost, maxmem: 256 * cost.N * cost.r + 1024 * 1024 };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize("NFC"), salt, length, options, (error, key) => (error ? reject(error) : resolve(key))),
  );
}
