/**
 * The forms in which a secret could show up in a log line: as written, as
 * JSON escapes it, and inside HTTP Basic credentials (base64 of "key:" and of
 * the key alone, which is what a logged Authorization header would carry).
 */
function formsOf(secret: string): string[] {
  const forms = new Set([secret, JSON.stringify(secret).slice(1, -1)]);
  for (const credentials of [`${secret}:`, secret]) {
    const base64 = Buffer.from(credentials).toString("base64");
    // Without padding, so a secret inside longer credentials is found too.
    forms.add(base64.replace(/=+$/, ""));
  }
  return [...forms].filter((form) => form.length >= 8);
}

/**
 * Which of the secrets appear in the text, in any of the forms above. Empty
 * when none leaked. Tests assert `expect(leakedSecrets(output, secrets)).toEqual([])`
 * so a failure names what leaked.
 */
export function leakedSecrets(text: string, secrets: readonly string[]): string[] {
  return secrets.filter((secret) => formsOf(secret).some((form) => text.includes(form)));
}
