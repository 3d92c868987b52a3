import { createHmac } from "node:crypto";

/**
 * How reads show a destination's static header values and URL query values: receivers' credentials
 * travel in them, so reads give a fingerprint instead of the value, e.g. `[set:hmac:1a2b3c4d]`: the
 * first 8 hex digits of the value's HMAC-SHA256 under the deployment's masking key (masking-key.ts).
 * Keyed, so a short or guessable credential cannot be found from a read by hashing guesses offline.
 * ASCII without spaces, so it reads the same in a header and in a URL.
 *
 * The unkeyed form reads gave before, `[set:sha256:…]`, is still recognised as a mask, so it is
 * never stored as a credential, but never matched to a stored value: matching it would take
 * comparing unkeyed hashes of stored credentials, a guessing oracle; a client holding one reads
 * again and gets the keyed form (PutDestination refuses it, saying so).
 */
export const MASKED_VALUE = /^\[set:(?:hmac|sha256):[0-9a-f]{8}\]$/;

/** Whether a value is a mask as reads show it, now or before fingerprints were keyed (not a value anyone would send). */
export function isMaskedValue(value: string): boolean {
  return MASKED_VALUE.test(value);
}

interface WebhookEntryLike {
  url: string;
  headers: Record<string, string>;
}

/** Masks values with the deployment's masking key; the same key on every replica gives the same masks. */
export class Masker {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length < 32) throw new Error("the masking key must be at least 32 bytes");
    this.#key = Buffer.from(key);
  }

  /** The masked form of a value; an empty value has nothing to hide and stays empty. */
  maskValue(value: string): string {
    return value === "" ? "" : `[set:hmac:${createHmac("sha256", this.#key).update(value).digest("hex").slice(0, 8)}]`;
  }

  /** Static headers with every value masked; names are shown. */
  maskHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
    return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, this.maskValue(value)]));
  }

  /**
   * A URL with its query values (and credentials, which new URLs cannot hold) masked; scheme, host,
   * path and query names stay readable. Works on the text as given, so the fingerprint is that of
   * the value as written in the URL.
   */
  maskUrl(url: string): string {
    const parts = splitUrl(url);
    const query = parts.query?.map(([name, value]): [string, string | undefined] => [
      name,
      value === undefined ? value : this.maskValue(value),
    ]);
    return joinUrl({ ...parts, authority: maskPassword(parts.authority, (value) => this.maskValue(value)), query });
  }

  /**
   * Puts stored values back where a PutDestination sends masked ones, so that a client that read a
   * destination, changed something and sent it back does not replace credentials with their masks.
   * A masked value is only taken from a stored entry with the same URL origin, the same header name
   * (any case) or query name, and a value with that fingerprint: changing a URL's host never carries
   * a credential to it. Masks that match nothing (the unkeyed form among them) are left for the
   * schema to refuse.
   */
  keepMaskedValues<Entry extends WebhookEntryLike>(entries: Entry[], stored: readonly WebhookEntryLike[]): Entry[] {
    return entries.map((entry) => {
      const origin = originOf(entry.url);
      const sameOrigin = origin === undefined ? [] : stored.filter((old) => originOf(old.url) === origin);
      if (sameOrigin.length === 0) return entry;
      const headers = this.keepMaskedHeaders(
        entry.headers,
        sameOrigin.map((old) => old.headers),
      );
      return { ...entry, url: this.keepMaskedQueryValues(entry.url, sameOrigin), headers };
    });
  }

  /**
   * Headers with each masked value replaced by the stored value of the same name (any case) and
   * fingerprint among `stored`, which the caller has chosen as going to the same receiver.
   */
  keepMaskedHeaders(
    headers: Readonly<Record<string, string>>,
    stored: readonly Readonly<Record<string, string>>[],
  ): Record<string, string> {
    return Object.fromEntries(
      Object.entries(headers).map(([name, value]) => {
        if (!isMaskedValue(value)) return [name, value];
        const lower = name.toLowerCase();
        for (const old of stored)
          for (const [oldName, oldValue] of Object.entries(old))
            if (oldName.toLowerCase() === lower && this.maskValue(oldValue) === value) return [name, oldValue];
        return [name, value];
      }),
    );
  }

  private keepMaskedQueryValues(url: string, sameOrigin: readonly WebhookEntryLike[]): string {
    const parts = splitUrl(url);
    if (!parts.query) return url;
    const query = parts.query.map(([name, value]): [string, string | undefined] => {
      if (value === undefined || !isMaskedValue(decodeQueryValue(value))) return [name, value];
      const shown = decodeQueryValue(value);
      const decodedName = decodeQueryValue(name);
      for (const old of sameOrigin)
        for (const [oldName, oldValue] of urlQueryPairs(old.url) ?? [])
          if (oldValue !== undefined && decodeQueryValue(oldName) === decodedName && this.maskValue(oldValue) === shown)
            return [name, oldValue];
      return [name, value];
    });
    return joinUrl({ ...parts, query });
  }
}

/**
 * The query of a URL as raw [name, value] pairs, in order (`value` undefined for a bare `?flag`);
 * undefined without a query.
 */
export function urlQueryPairs(url: string): [string, string | undefined][] | undefined {
  return splitUrl(url).query;
}

/** A query value as its receiver reads it: percent-decoded, or as written when that fails. */
export function decodeQueryValue(raw: string): string {
  try {
    return decodeURIComponent(raw.replaceAll("+", " "));
  } catch {
    return raw;
  }
}

function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

/** A URL's text cut at its delimiters, so that masking changes nothing else of it. */
interface UrlParts {
  /** "https://" (everything up to the authority), or "" for a URL without one. */
  scheme: string;
  authority: string;
  path: string;
  query: [string, string | undefined][] | undefined;
  fragment: string | undefined;
}

function splitUrl(url: string): UrlParts {
  const hashAt = url.indexOf("#");
  const fragment = hashAt < 0 ? undefined : url.slice(hashAt + 1);
  const beforeHash = hashAt < 0 ? url : url.slice(0, hashAt);
  const queryAt = beforeHash.indexOf("?");
  const query =
    queryAt < 0
      ? undefined
      : beforeHash
          .slice(queryAt + 1)
          .split("&")
          .map((pair): [string, string | undefined] => {
            const eq = pair.indexOf("=");
            return eq < 0 ? [pair, undefined] : [pair.slice(0, eq), pair.slice(eq + 1)];
          });
  const beforeQuery = queryAt < 0 ? beforeHash : beforeHash.slice(0, queryAt);
  const schemeEnd = beforeQuery.indexOf("://");
  if (schemeEnd < 0) return { scheme: "", authority: "", path: beforeQuery, query, fragment };
  const authorityStart = schemeEnd + 3;
  const pathAt = beforeQuery.indexOf("/", authorityStart);
  const authorityEnd = pathAt < 0 ? beforeQuery.length : pathAt;
  return {
    scheme: beforeQuery.slice(0, authorityStart),
    authority: beforeQuery.slice(authorityStart, authorityEnd),
    path: beforeQuery.slice(authorityEnd),
    query,
    fragment,
  };
}

function joinUrl(parts: UrlParts): string {
  const query =
    parts.query === undefined ? "" : `?${parts.query.map(([name, value]) => (value === undefined ? name : `${name}=${value}`)).join("&")}`;
  return `${parts.scheme}${parts.authority}${parts.path}${query}${parts.fragment === undefined ? "" : `#${parts.fragment}`}`;
}

function maskPassword(authority: string, maskValue: (value: string) => string): string {
  const at = authority.lastIndexOf("@");
  if (at < 0) return authority;
  const userinfo = authority.slice(0, at);
  const colon = userinfo.indexOf(":");
  // A user without a password is often a token itself.
  if (colon < 0) return `${maskValue(userinfo)}${authority.slice(at)}`;
  return `${userinfo.slice(0, colon + 1)}${maskValue(userinfo.slice(colon + 1))}${authority.slice(at)}`;
}

/** Whether any header value or URL query value of the entries is masked (so the stored record is needed). */
export function holdsMaskedValues(entries: readonly WebhookEntryLike[]): boolean {
  return entries.some(
    (entry) =>
      Object.values(entry.headers).some(isMaskedValue) ||
      (urlQueryPairs(entry.url) ?? []).some(([, value]) => value !== undefined && isMaskedValue(decodeQueryValue(value))),
  );
}
