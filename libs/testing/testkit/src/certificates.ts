import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

/** A self-signed certificate and its key, as PEM text and as files. */
export interface SelfSignedCertificate {
  key: string;
  cert: string;
  keyPath: string;
  certPath: string;
}

/**
 * Makes a self-signed certificate (EC P-256, valid one day) with the openssl
 * CLI, for 127.0.0.1 and localhost unless told otherwise: Node has no
 * certificate generator, and tests must not ship fixed keys. The certificate
 * is its own CA, so a client that trusts it can verify the server.
 */
export async function makeSelfSignedCertificate(
  dir: string,
  options: { name?: string; commonName?: string; subjectAltName?: string } = {},
): Promise<SelfSignedCertificate> {
  const name = options.name ?? "server";
  const keyPath = join(dir, `${name}-key.pem`);
  const certPath = join(dir, `${name}-cert.pem`);
  // prettier-ignore
  await promisify(execFile)("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
    "-keyout", keyPath, "-out", certPath, "-days", "1",
    "-subj", `/CN=${options.commonName ?? "127.0.0.1"}`,
    "-addext", `subjectAltName=${options.subjectAltName ?? "IP:127.0.0.1,DNS:localhost"}`,
  ]);
  return { key: await readFile(keyPath, "utf8"), cert: await readFile(certPath, "utf8"), keyPath, certPath };
}
