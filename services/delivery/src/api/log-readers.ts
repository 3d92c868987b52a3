import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { connectBus, type BusConnection, type Logger } from "@switchyard/platform";

/** One connection's JetStream handles. */
export interface LogReader {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
}

/** Connections the attempt log is read over. */
const READERS = 4;

/**
 * The NATS connections the attempt log is read over, apart from the one delivery works on.
 * nats-server serves what one connection asks one request at a time, and to read a message of a
 * file-store block that is not in memory it first loads the whole block (8 MB). Over delivery's
 * own connection a console page would hold up delivery's pulls
 * and acks that long, and a page's block loads would run one after another. Opened when the first
 * page is asked for.
 */
export class LogReaders {
  private opened: Promise<{ connections: BusConnection[]; readers: LogReader[] }> | undefined;

  constructor(
    private readonly servers: string[],
    private readonly logger: Logger,
  ) {}

  /** The `index`th reader (any number: they are taken in turn). */
  async reader(index: number): Promise<LogReader> {
    const { readers } = await this.open();
    return readers[index % readers.length]!;
  }

  async close(): Promise<void> {
    const opened = await this.opened?.catch(() => undefined);
    this.opened = undefined;
    if (opened) await Promise.all(opened.connections.map((connection) => connection.drain()));
  }

  private open(): Promise<{ connections: BusConnection[]; readers: LogReader[] }> {
    this.opened ??= (async () => {
      const connections = await Promise.all(
        Array.from({ length: READERS }, (_, index) =>
          connectBus({ servers: this.servers, name: `switchyard-delivery-attempt-log-${index}`, logger: this.logger }),
        ),
      );
      const readers = await Promise.all(connections.map(async ({ nc }) => ({ js: jetstream(nc), jsm: await jetstreamManager(nc) })));
      return { connections, readers };
    })().catch((error: unknown) => {
      this.opened = undefined;
      throw error;
    });
    return this.opened;
  }
}
