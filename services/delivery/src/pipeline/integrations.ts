/**
 * Whether a call's integrations let it through to the destinations named
 * `name` there (case-sensitive): on by default; `"All": false` turns
 * everything off except destinations set to true; `name: false` turns them
 * off; an object value counts as on.
 */
export function integrationEnabled(integrations: Record<string, unknown> | undefined, name: string): boolean {
  if (!integrations) return true;
  const own = integrations[name];
  if (own !== undefined) return own !== false;
  return integrations.All !== false;
}
