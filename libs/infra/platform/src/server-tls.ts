import { readFile } from "node:fs/promises";
import { ConfigError } from "./errors.js";

/** What a server needs to speak TLS, read from the files the environment names. */
export interface ServerTls {
  /** PEM certificate chain, the server's own certificate first. */
  cert: Buffer;
  /** PEM private key. */
  key: Buffer;
  /** PEM CA certificates of client certificates; when set, clients must present one it signed (mutual TLS). */
  clientCa?: Buffer;
}

export interface TlsEnv {
  SWITCHYARD_TLS_CERT_FILE?: string | undefined;
  SWITCHYARD_TLS_KEY_FILE?: string | undefined;
  SWITCHYARD_TLS_CLIENT_CA_FILE?: string | undefined;
}

/**
 * The servers' TLS settings: undefined (plaintext) unless SWITCHYARD_TLS_CERT_FILE
 * and SWITCHYARD_TLS_KEY_FILE are set. A half-set pair or an unreadable file
 * stops start-up with a ConfigError naming the variable: a service meant to
 * run with TLS must never fall back to plaintext.
 */
export async function loadServerTls(env: TlsEnv): Promise<ServerTls | undefined> {
  const { SWITCHYARD_TLS_CERT_FILE: certFile, SWITCHYARD_TLS_KEY_FILE: keyFile, SWITCHYARD_TLS_CLIENT_CA_FILE: clientCaFile } = env;
  if (!certFile && !keyFile) {
    if (clientCaFile) throw new ConfigError("SWITCHYARD_TLS_CLIENT_CA_FILE: needs SWITCHYARD_TLS_CERT_FILE and SWITCHYARD_TLS_KEY_FILE");
    return undefined;
  }
  if (!certFile) throw new ConfigError("SWITCHYARD_TLS_CERT_FILE: must be set when SWITCHYARD_TLS_KEY_FILE is");
  if (!keyFile) throw new ConfigError("SWITCHYARD_TLS_KEY_FILE: must be set when SWITCHYARD_TLS_CERT_FILE is");
  const cert = await readPem("SWITCHYARD_TLS_CERT_FILE", certFile, "CERTIFICATE");
  const key = await readPem("SWITCHYARD_TLS_KEY_FILE", keyFile, "PRIVATE KEY");
  return { cert, key, ...(clientCaFile ? { clientCa: await readPem("SWITCHYARD_TLS_CLIENT_CA_FILE", clientCaFile, "CERTIFICATE") } : {}) };
}

async function readPem(variable: string, path: string, label: string): Promise<Buffer> {
  let content: Buffer;
  try {
    content = await readFile(path);
  } catch (error) {
    throw new ConfigError(`${variable}: cannot read ${path}`, { cause: error });
  }
  // "PRIVATE KEY" also matches "EC PRIVATE KEY" and "RSA PRIVATE KEY".
  if (!new RegExp(`-----BEGIN [A-Z ]*${label}-----`).test(content.toString("latin1"))) {
    throw new ConfigError(`${variable}: ${path} holds no PEM ${label.toLowerCase()}`);
  }
  return content;
}
