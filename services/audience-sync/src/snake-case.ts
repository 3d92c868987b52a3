/**
 * The trait key of an audience or computed trait: its name in snake_case.
 * "High Value Users", "highValueUsers" and "High-Value users!" all become
 * "high_value_users". Words break at spaces and punctuation, at a lower-case
 * letter or digit followed by an upper-case one ("valueUsers"), and before the
 * last capital of an acronym followed by a lower-case letter ("HTTPServer" →
 * "http_server"). Letters followed by digits stay together ("top10"). Accents
 * are dropped ("Café" → "cafe"); other scripts are kept as they are. Returns
 * undefined when nothing is left (the name must be refused).
 */
export function snakeCase(name: string): string | undefined {
  const withoutAccents = name.normalize("NFKD").replace(/\p{M}+/gu, "");
  const words = withoutAccents
    .replace(/(\p{Ll}|\p{N})(\p{Lu})/gu, "$1 $2")
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, "$1 $2")
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word.length > 0)
    .map((word) => word.toLowerCase());
  return words.length > 0 ? words.join("_") : undefined;
}
