import type { MappedRequest } from "@switchyard/mappings";
import type { Masker } from "@switchyard/workspace";
import type { EntryRequest } from "../kind.js";
import { USER_AGENT } from "../webhooks/requests.js";

/** The headers Switchyard sets on every request, after the mapping's (which cannot use these names). */
export const FIXED_HEADERS: readonly string[] = ["user-agent", USER_AGENT, "content-type", "application/json"];

/**
 * What the attempt log shows of a mapped request sent with `headers` (the mapping's, then
 * FIXED_HEADERS, then the signatures): mapped header values may come from the call or hold
 * credentials, so they show as fingerprints, and so do the URL's query values.
 */
export function maskedRequest(request: MappedRequest, headers: string[], masker: Masker): EntryRequest {
  const mapped = request.headers.map((value, at) => (at % 2 === 0 ? value : masker.maskValue(value)));
  return { headers, loggedHeaders: [...mapped, ...FIXED_HEADERS], loggedUrl: masker.maskUrl(request.url) };
}
