import { readFile } from "node:fs/promises";
import { verifyStandardWebhook, verifyXSignature } from "@switchyard/webhook-verify";
import { integerOption, parseCommandArgs, stringOption, stringsOption } from "../args.js";
import { CliError, usageError } from "../cli-error.js";

export const VERIFY_HELP = `Usage: switchyard verify [options] [--body-file <file> | < body]

Checks the signature(s) of a webhook body with @switchyard/webhook-verify (constant time, over
the exact bytes). Exit code 0 when every given signature is valid, 1 when one is not, 2 on bad
usage. The body comes from --body-file, --body, or stdin.

X-Signature (hex HMAC-SHA1 with the destination's sharedSecret):
  --secret <secret>            the shared secret
  --signature <hex>            the X-Signature header

Standard Webhooks (HMAC-SHA256, webhook-* headers):
  --signing-secret <whsec_..>  the signing secret (repeatable: valid if any matches)
  --webhook-id <id>            --webhook-timestamp <seconds>
  --webhook-signature <value>  the webhook-signature header ("v1,<base64> ...")
  --tolerance <seconds>        allowed clock distance of webhook-timestamp (default 300)

  --body-file <file>           the raw body (exact bytes as received)
  --body <text>                the body as text (UTF-8)

Examples:
  npx switchyard verify --secret example-shared-secret \\
    --signature "$(printf '{"a":1}' | openssl dgst -sha1 -hmac example-shared-secret -r | cut -d' ' -f1)" --body '{"a":1}'
  npx switchyard verify --secret "$SECRET" --signature "$X_SIGNATURE" --body-file body.json
  curl -s https://example.com/captured-body | npx switchyard verify --secret "$SECRET" --signature "$X_SIGNATURE"
  npx switchyard verify --signing-secret "$WHSEC" --webhook-id "$ID" --webhook-timestamp "$TS" \\
    --webhook-signature "$SIG" --body-file body.json`;

export async function verify(argv: string[]): Promise<number> {
  const args = parseCommandArgs("verify", argv, {
    secret: { type: "string" },
    signature: { type: "string" },
    "signing-secret": { type: "string", multiple: true },
    "webhook-id": { type: "string" },
    "webhook-timestamp": { type: "string" },
    "webhook-signature": { type: "string" },
    tolerance: { type: "string" },
    "body-file": { type: "string" },
    body: { type: "string" },
  });
  if (!args) {
    process.stdout.write(`${VERIFY_HELP}\n`);
    return 0;
  }
  const { values } = args;
  const secret = stringOption(values, "secret");
  const signature = stringOption(values, "signature");
  const signingSecrets = stringsOption(values, "signing-secret");
  const checkX = secret !== undefined || signature !== undefined;
  const checkStandard =
    signingSecrets.length > 0 ||
    ["webhook-id", "webhook-timestamp", "webhook-signature"].some((f) => stringOption(values, f) !== undefined);
  if (!checkX && !checkStandard)
    throw usageError("nothing to check: give --secret and --signature, or the Standard Webhooks options", "verify");
  if (checkX && (secret === undefined || signature === undefined))
    throw usageError("X-Signature needs both --secret and --signature", "verify");
  if (checkStandard && signingSecrets.length === 0) throw usageError("Standard Webhooks needs --signing-secret", "verify");
  const tolerance = integerOption(values, "tolerance", "verify");

  const body = await readBody(stringOption(values, "body-file"), stringOption(values, "body"));
  let allValid = true;
  if (checkX) {
    const valid = verifyXSignature(body, signature, secret!);
    allValid &&= valid;
    process.stdout.write(`X-Signature: ${valid ? "valid" : "invalid"}\n`);
  }
  if (checkStandard) {
    const headers = {
      "webhook-id": stringOption(values, "webhook-id"),
      "webhook-timestamp": stringOption(values, "webhook-timestamp"),
      "webhook-signature": stringOption(values, "webhook-signature"),
    };
    const result = verifyStandardWebhook(body, headers, signingSecrets, tolerance === undefined ? {} : { toleranceSeconds: tolerance });
    allValid &&= result.valid;
    process.stdout.write(
      `Standard Webhooks: ${result.valid ? `valid (webhook-id ${result.id})` : `invalid: ${result.reason}: ${result.message}`}\n`,
    );
  }
  return allValid ? 0 : 1;
}

async function readBody(file: string | undefined, text: string | undefined): Promise<Buffer> {
  if (file !== undefined && text !== undefined) throw usageError("give the body once: --body-file or --body", "verify");
  if (text !== undefined) return Buffer.from(text, "utf8");
  if (file !== undefined) {
    try {
      return await readFile(file);
    } catch (error) {
      throw new CliError(`cannot read ${file}: ${error instanceof Error ? error.message : String(error)}`, 2);
    }
  }
  if (process.stdin.isTTY) throw usageError("no body: give --body-file <file>, --body <text>, or pipe it on stdin", "verify");
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
