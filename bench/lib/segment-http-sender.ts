import { Pool } from "undici";
import { basicAuthorization } from "@switchyard/workspace";

/**
 * POSTs pre-built Segment batch bodies to one origin as the Segment SDKs send
 * them (JSON, the write key as Basic auth user), over an undici Pool of
 * `connections` keep-alive connections without pipelining. A request that is
 * not answered 200 {"success":true} fails with its status and body.
 */
export class SegmentHttpSender {
  private readonly pool: Pool;
  private readonly headers: Record<string, string>;

  constructor(
    origin: string,
    writeKey: string,
    connections: number,
    private readonly path = "/v1/batch",
  ) {
    this.pool = new Pool(origin, { connections, pipelining: 1 });
    this.headers = { "content-type": "application/json", authorization: basicAuthorization(writeKey) };
  }

  async post(body: Buffer): Promise<void> {
    const response = await this.pool.request({ method: "POST", path: this.path, headers: this.headers, body });
    const text = await response.body.text();
    if (response.statusCode !== 200 || text !== '{"success":true}') {
      throw new Error(`POST ${this.path}: ${response.statusCode} ${text.slice(0, 500)}`);
    }
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
