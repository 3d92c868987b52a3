/**
 * Writes docs/configuration.md from the services' environment schemas: per service, a table of
 * each variable's default, its rule (read from the zod checks) and its description (the field's
 * `.describe()` text, so the text lives once, beside the rule).
 * With --check it writes nothing and fails when the committed file differs from what it would write.
 */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { audienceSyncEnvSchema } from "@switchyard/audience-sync";
import { consoleEnvSchema } from "@switchyard/console";
import { deliveryEnvSchema } from "@switchyard/delivery";
import { ingestEnvSchema } from "@switchyard/ingest";
import { insightsEnvSchema } from "@switchyard/insights";
import { commonEnvSchema } from "@switchyard/platform";
import * as prettier from "prettier";
import type { z } from "zod";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const OUTPUT = path.join(ROOT, "docs/configuration.md");

type Shape = Record<string, z.ZodType>;

const SERVICES: { name: string; what: string; shape: Shape }[] = [
  { name: "ingest", what: "The gRPC and Segment-compatible HTTP intake", shape: ingestEnvSchema.shape },
  { name: "delivery", what: "Webhook delivery, and the configuration and delivery APIs", shape: deliveryEnvSchema.shape },
  { name: "audience-sync", what: "Audience and computed-trait syncs, and deletions", shape: audienceSyncEnvSchema.shape },
  { name: "insights", what: "Source schemas and usage counts", shape: insightsEnvSchema.shape },
  { name: "console", what: "The web console", shape: consoleEnvSchema.shape },
];

/** The parts of zod's internal definition this script reads (zod 4's `_zod.def`). */
interface Def {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  defaultValue?: unknown;
  entries?: Record<string, string>;
  checks?: { _zod: { def: CheckDef } }[];
}
interface CheckDef {
  check: string;
  format?: string;
  value?: number;
  inclusive?: boolean;
  minimum?: number;
  maximum?: number;
  error?: (issue: unknown) => unknown;
}

const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

interface Field {
  variable: string;
  default: string;
  rule: string;
  description: string;
}

function describeField(variable: string, schema: z.ZodType): Field {
  let description = schema.description;
  let fallback: unknown;
  let hasDefault = false;
  let optional = false;
  let current: z.ZodType | undefined = schema;
  let base: z.ZodType | undefined;
  // Peel the wrappers down to the type that holds the checks: for a pipe (a transform), its input.
  while (current !== undefined && base === undefined) {
    description ??= current.description;
    const def = defOf(current);
    switch (def.type) {
      case "default":
        hasDefault = true;
        fallback = def.defaultValue;
        current = def.innerType;
        break;
      case "optional":
        optional = true;
        current = def.innerType;
        break;
      case "pipe":
        current = def.in;
        break;
      default:
        base = current;
    }
  }
  if (base === undefined) throw new Error(`${variable}: no base type found in its schema`);
  if (!description) throw new Error(`${variable}: no description; add .describe("...") to its schema`);
  return {
    variable,
    default: hasDefault ? defaultText(variable, fallback) : optional ? "–" : "required",
    rule: ruleOf(variable, base),
    description,
  };
}

function ruleOf(variable: string, schema: z.ZodType): string {
  const def = defOf(schema);
  const checks = (def.checks ?? []).map((check) => check._zod.def);
  const messages = checks.filter((check) => check.check === "custom" || check.format === "regex").map(messageOf);
  switch (def.type) {
    case "enum":
      return oneOf(Object.values(def.entries ?? {}).map((value) => `\`${value}\``));
    case "boolean":
      return "`true` or `false`";
    case "number": {
      const integer = checks.some((check) => check.format === "safeint" || check.format === "int32");
      let min: string | undefined;
      let max: string | undefined;
      for (const check of checks) {
        if (check.check === "greater_than" && check.value !== undefined)
          min = check.inclusive ? String(check.value) : integer ? String(check.value + 1) : `over ${check.value}`;
        if (check.check === "less_than" && check.value !== undefined)
          max = check.inclusive ? String(check.value) : integer ? String(check.value - 1) : `under ${check.value}`;
      }
      const kind = integer ? "integer" : "number";
      const range =
        min !== undefined && max !== undefined
          ? `${min} to ${max}`
          : min !== undefined
            ? min.startsWith("over")
              ? min
              : `${min} or more`
            : max !== undefined
              ? max.startsWith("under")
                ? max
                : `${max} at most`
              : undefined;
      return [range ? `${kind}, ${range}` : kind, ...messages].join("; ");
    }
    case "string": {
      const parts: string[] = [];
      for (const check of checks) {
        if (check.check === "min_length" && check.minimum !== undefined)
          parts.push(check.minimum === 1 ? "not empty" : `at least ${check.minimum} characters`);
        if (check.check === "max_length" && check.maximum !== undefined) parts.push(`at most ${check.maximum} characters`);
      }
      // A pattern's or refinement's message says what the text must be; "text" would add nothing.
      if (messages.length > 0) return [...parts, ...messages].join("; ");
      return parts.length > 0 ? `text, ${parts.join(", ")}` : "text";
    }
    default:
      throw new Error(`${variable}: a ${def.type} schema; teach gen-config-doc.ts its rule`);
  }
}

/** A refinement's or pattern's own message, as the rule it states ("must be 1, 3 or 5" -> "1, 3 or 5"). */
function messageOf(check: CheckDef): string {
  const message = check.error?.({});
  const text = typeof message === "string" ? message : (message as { message?: string } | undefined)?.message;
  if (!text) throw new Error(`a ${check.check} check without a message: give it one, it is the rule the docs show`);
  return text.replace(/^must (be )?/, "");
}

function oneOf(values: string[]): string {
  return values.length <= 1 ? (values[0] ?? "") : `${values.slice(0, -1).join(", ")} or ${values.at(-1)}`;
}

const DURATIONS: [number, string][] = [
  [86_400_000, "days"],
  [3_600_000, "h"],
  [60_000, "min"],
  [1_000, "s"],
];
const SIZES: [number, string][] = [
  [1024 ** 3, "GiB"],
  [1024 ** 2, "MiB"],
  [1024, "KiB"],
];

function defaultText(variable: string, value: unknown): string {
  if (value === "") return "empty";
  const shown = `\`${String(value)}\``;
  if (typeof value !== "number" || value === 0) return shown;
  const units = variable.endsWith("_MS") ? DURATIONS : variable.endsWith("_BYTES") ? SIZES : [];
  for (const [size, unit] of units) {
    if (value >= size && value % size === 0) {
      const count = value / size;
      return `${shown} (${count} ${unit === "days" && count === 1 ? "day" : unit})`;
    }
  }
  return shown;
}

function table(fields: Field[], known: Set<string>): string {
  const cell = (text: string) => text.replace(/\|/g, "\\|");
  // Variable names in descriptions read as code, as they are in every other doc.
  const withCode = (text: string) =>
    text.replace(/(?<![`\w])([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?![`\w])/g, (name) => (known.has(name) ? `\`${name}\`` : name));
  const rows = fields.map((field) =>
    [`\`${field.variable}\``, field.default, cell(field.rule), cell(withCode(field.description))].join(" | "),
  );
  return ["| Variable | Default | Rule | Description |", "| --- | --- | --- | --- |", ...rows.map((row) => `| ${row} |`)].join("\n");
}

export async function configurationDoc(): Promise<string> {
  const known = new Set([...Object.keys(commonEnvSchema.shape), ...SERVICES.flatMap((service) => Object.keys(service.shape))]);
  const common = Object.entries(commonEnvSchema.shape as Shape).map(([variable, schema]) => describeField(variable, schema));
  const sections = SERVICES.map((service) => {
    // A service's own variables, and any shared one it reads by a rule of its own.
    const own = Object.entries(service.shape).filter(([variable, schema]) => (commonEnvSchema.shape as Shape)[variable] !== schema);
    const fields = own.map(([variable, schema]) => describeField(variable, schema));
    return `## ${service.name}\n\n${service.what}. Besides the settings of [every service](#every-service):\n\n${table(fields, known)}\n`;
  });
  const text = `# Configuration

<!-- Generated by \`npm run gen:config-doc\` (scripts/gen-config-doc.ts) from the services' environment schemas; edit the schemas' \`.describe()\` texts, not this file. CI fails when it is stale. -->

Every service reads its settings from environment variables once, at start-up. A value that breaks
its rule stops the service with one line naming the variable and the rule; a port in use or a NATS
server without JetStream does the same. Durations are in milliseconds. Give every replica of a
service the same settings, and every service the same values for the settings they share
(\`NATS_URL\`, \`SWITCHYARD_NAMESPACE\`, \`SWITCHYARD_STREAM_REPLICAS\`, the retention settings): streams
are updated at start-up from them, and the service started last wins.

Not here: the variables of \`npm start\` itself ([README](../README.md#quick-start)), those of the
\`switchyard\` CLI (\`npx switchyard --help\`), and the workspace file's format
([operations.md](operations.md#the-workspace-file)). What to tune and when: [operations.md](operations.md).

## Every service

${table(common, known)}

${sections.join("\n")}`;
  const options = (await prettier.resolveConfig(OUTPUT)) ?? {};
  return prettier.format(text, { ...options, parser: "markdown" });
}

async function main(): Promise<void> {
  const check = process.argv.includes("--check");
  const wanted = await configurationDoc();
  if (!check) {
    await writeFile(OUTPUT, wanted);
    console.log(`wrote ${path.relative(ROOT, OUTPUT)}`);
    return;
  }
  const committed = await readFile(OUTPUT, "utf8").catch(() => "");
  if (committed !== wanted) {
    console.error("docs/configuration.md is stale: run 'npm run gen:config-doc' and commit the result");
    process.exit(1);
  }
  console.log("docs/configuration.md is up to date");
}

await main();
