/** Key layout of the workspace configuration bucket (documented in docs/subjects.md). */
export const kvKeys = {
  source: (id: string) => `source.${id}`,
  destination: (id: string) => `destination.${id}`,
  connection: (sourceId: string, destinationId: string) => `connection.${sourceId}.${destinationId}`,
  /**
   * The workspace file's mark on a record: the SHA-256 of the value it last wrote there. Outside
   * the layout above, so lists and the WorkspaceView never take it for a record.
   */
  seeded: (recordKey: string) => `seeded.${recordKey}`,
} as const;

export type ParsedKey =
  { kind: "source"; id: string } | { kind: "destination"; id: string } | { kind: "connection"; sourceId: string; destinationId: string };

/** What a configuration bucket key names; undefined for a key outside the layout. */
export function parseKvKey(key: string): ParsedKey | undefined {
  const parts = key.split(".");
  if (parts[0] === "source" && parts.length === 2 && parts[1]) return { kind: "source", id: parts[1] };
  if (parts[0] === "destination" && parts.length === 2 && parts[1]) return { kind: "destination", id: parts[1] };
  if (parts[0] === "connection" && parts.length === 3 && parts[1] && parts[2])
    return { kind: "connection", sourceId: parts[1], destinationId: parts[2] };
  return undefined;
}
