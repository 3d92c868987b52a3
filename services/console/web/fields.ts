import type { ApiError, FieldProblem } from "./api";

/**
 * Error paths as the services write them ("destination.settings.webhooks.0.url",
 * "header.source_id", "webhooks[1].headers.X-Key") normalized to the keys the forms give their
 * inputs ("webhooks.0.url"): camelCase, indexes as ".n", without the request's message name
 * (`prefix`) and without "settings" (the stored record's layer the API does not show).
 */
export function fieldKey(path: string, prefix = ""): string {
  const parts = path
    .replace(/\[(\d+)\]/g, ".$1")
    .split(".")
    .filter((part) => part !== "settings");
  // Header names (the part after "headers") are the user's own text: kept as they are.
  const camel = parts.map((part, index) =>
    parts[index - 1] === "headers" ? part : part.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()),
  );
  const joined = camel.join(".");
  return prefix && joined.startsWith(`${prefix}.`) ? joined.slice(prefix.length + 1) : joined === prefix ? "" : joined;
}

/** A field path as the services' problems begin (the console's server reads refusals the same way). */
const FIELD_PATH = /^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+|\[\d+\])*): (.+)$/s;

/** Problems a service answers as text ("mapping.url: ..."), each with its field ("" when it names none). */
export function problemsOfTexts(texts: readonly string[]): FieldProblem[] {
  return texts.map((text) => {
    const match = FIELD_PATH.exec(text);
    return match ? { field: match[1]!, message: match[2]! } : { field: "", message: text };
  });
}

/** The form's field errors: key -> messages, plus the problems no input of the form shows. */
export interface FormErrors {
  byField: Map<string, string>;
  /** The message when the error named no field the form has. */
  general: string | undefined;
}

export function formErrors(error: ApiError, knownFields: (key: string) => boolean, prefix = ""): FormErrors {
  const byField = new Map<string, string>();
  const unplaced: FieldProblem[] = [];
  for (const problem of error.fields) {
    const key = fieldKey(problem.field, prefix);
    if (knownFields(key) && !byField.has(key)) byField.set(key, problem.message);
    else unplaced.push(problem);
  }
  const general =
    byField.size === 0 ? error.message : unplaced.length > 0 ? unplaced.map((p) => `${p.field}: ${p.message}`).join("; ") : undefined;
  return { byField, general };
}

export const NO_ERRORS: FormErrors = { byField: new Map(), general: undefined };
