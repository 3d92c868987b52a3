/** The name of this destination in a call's `integrations` object (case-sensitive). */
export const WEBHOOKS_INTEGRATION = "Webhooks";

/**
 * Whether a call's integrations let it through to the Webhooks destination:
 * on by default; `"All": false` turns everything off except destinations set
 * to true; `"Webhooks": false` turns it off; an object value counts as on.
 */
export function webhooksEnabled(integrations: Record<string, unknown> | undefined): boolean {
  if (!integrations) return true;
  const own = integrations[WEBHOOKS_INTEGRATION];
  if (own !== undefined) return own !== false;
  return integrations.All !== false;
}
