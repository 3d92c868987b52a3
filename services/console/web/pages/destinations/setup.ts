import type { CallFilter, Destination, Source } from "../../api";

/** What reads show instead of a stored secret; putting it back keeps the secret. */
export const SECRET_PLACEHOLDER = "[set]";

/** What a kind's setup form is given. */
export interface SetupProps {
  /** The destination being edited; undefined for a new one. */
  existing: Destination | undefined;
  sources: Source[];
  connectedSources: string[];
  /** The filter of each connection to this destination, by source. */
  filters: Record<string, CallFilter | undefined>;
}
