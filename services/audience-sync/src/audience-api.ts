import type { ServerReadableStream } from "@grpc/grpc-js";
import type {
  AudienceServiceServer,
  SyncAudienceSnapshotResponse,
  SyncHeader,
  SyncTraitSnapshotRequest,
  TraitValue,
} from "@switchyard/contracts";
import { ServiceError, type AsyncService, type ClientStreamingMethod } from "@switchyard/platform";
import { ID_PATTERN, ID_RULE } from "@switchyard/workspace";
import type { SyncEngine, SyncSummary, SyncTarget } from "./sync-engine.js";
import { chunkUserId, type AudienceSnapshotChunk } from "./snapshot-chunk.js";
import { DuplicateUserError, SnapshotCollector } from "./trait-state.js";
import type { LoadedState, SyncKind } from "./state-store.js";

const MAX_USER_ID_LENGTH = 256;

/** AudienceService as served: SyncAudienceSnapshot messages come decoded by decodeAudienceSnapshotChunk. */
export type AudienceServiceImplementation = AsyncService<
  Pick<AudienceServiceServer, "syncAudienceIncrement" | "syncTraitSnapshot" | "syncTraitIncrement" | "listAudiences">
> & {
  syncAudienceSnapshot: ClientStreamingMethod<AudienceSnapshotChunk, SyncAudienceSnapshotResponse>;
};

/**
 * switchyard.v1.AudienceService: audience and computed-trait syncs, as
 * snapshots (streamed) or increments. Serve it with audienceServiceDefinition,
 * `auth: "admin"` (the server checks the admin token) and `mapError: audienceErrors`.
 */
export function audienceApi(deps: { engine: SyncEngine }): AudienceServiceImplementation {
  const { engine } = deps;

  const snapshot =
    <Request extends { header: SyncHeader | undefined }>(kind: SyncKind, add: (collector: SnapshotCollector, request: Request) => void) =>
    async (call: ServerReadableStream<Request, { summary: SyncSummary }>): Promise<{ summary: SyncSummary }> => {
      const snapshot = await readSnapshot(call, kind, engine, add);
      // A cut-off stream is dropped whole; answering still ends the call on our side.
      if (!snapshot) throw new ServiceError("CANCELLED", "the snapshot stream ended early; nothing was applied");
      return { summary: await engine.apply(snapshot.target, { mode: "snapshot", collector: snapshot.collector }, snapshot.prefetched) };
    };

  return {
    syncAudienceSnapshot: snapshot<AudienceSnapshotChunk>("audience", (collector, chunk) => {
      for (let i = 0; i < chunk.idStarts.length; i++) {
        const start = chunk.idStarts[i]!;
        const length = chunk.idLengths[i]!;
        // An ASCII id (nearly every one) has as many characters as bytes and goes in as bytes;
        // any other id, and any id of a bad length (for checkUserId's error), goes in as a string.
        if (length > 0 && length <= MAX_USER_ID_LENGTH && collector.addAscii(chunk.bytes, start, length)) continue;
        collector.add(checkUserId(chunkUserId(chunk, i), `user_ids[${i}]`));
      }
    }),
    syncTraitSnapshot: snapshot<SyncTraitSnapshotRequest>("trait", (collector, request) => {
      request.values.forEach((value, i) => collector.add(checkUserId(value.userId, `values[${i}].user_id`), valueJson(value)));
    }),

    syncAudienceIncrement: async (request) => {
      const target = targetOf("audience", request.header);
      engine.checkTarget(target);
      const set = new SnapshotCollector("true");
      request.addedUserIds.forEach((userId, i) => set.add(checkUserId(userId, `added_user_ids[${i}]`)));
      const removed = removedSet(request.removedUserIds, new Set(request.addedUserIds));
      return { summary: await engine.apply(target, { mode: "increment", set, removed }) };
    },

    syncTraitIncrement: async (request) => {
      const target = targetOf("trait", request.header);
      engine.checkTarget(target);
      const set = new SnapshotCollector();
      request.setValues.forEach((value, i) => set.add(checkUserId(value.userId, `set_values[${i}].user_id`), valueJson(value)));
      const removed = removedSet(request.removedUserIds, new Set(request.setValues.map((v) => v.userId)));
      return { summary: await engine.apply(target, { mode: "increment", set, removed }) };
    },

    listAudiences: async (request) => {
      // Checked: an id that breaks the rule could not name a stored audience (and could be a KV wildcard).
      if (request.sourceId !== "" && !ID_PATTERN.test(request.sourceId))
        throw new ServiceError("INVALID_ARGUMENT", `source_id: ${ID_RULE}`);
      return { audiences: await engine.list(request.sourceId || undefined) };
    },
  };
}

/**
 * Reads a snapshot stream to its end, loading the state it will be diffed
 * against meanwhile. Resolves undefined when the client cancelled or the
 * stream broke: then nothing of it is applied.
 */
function readSnapshot<Request extends { header: SyncHeader | undefined }>(
  call: ServerReadableStream<Request, unknown>,
  syncKind: SyncKind,
  engine: SyncEngine,
  add: (collector: SnapshotCollector, request: Request) => void,
): Promise<{ target: SyncTarget; collector: SnapshotCollector; prefetched: Promise<LoadedState> } | undefined> {
  return new Promise((resolve, reject) => {
    let started: { target: SyncTarget; prefetched: Promise<LoadedState> } | undefined;
    let expected = 0;
    const collector = new SnapshotCollector(syncKind === "audience" ? "true" : undefined);
    let failed = false;
    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      call.removeAllListeners("data");
      call.resume();
      reject(error);
    };
    call.on("data", (request: Request) => {
      if (failed) return;
      try {
        if (!started) {
          const target = targetOf(syncKind, request.header);
          engine.checkTarget(target);
          started = { target, prefetched: engine.prefetch(target) };
          expected = request.header?.expectedCount ?? 0;
        }
        add(collector, request);
      } catch (error) {
        fail(error);
      }
    });
    call.on("end", () => {
      if (failed) return;
      if (!started) return fail(new ServiceError("INVALID_ARGUMENT", "header: the first message must carry the sync header"));
      if (expected > 0 && collector.size !== expected)
        return fail(
          new ServiceError(
            "INVALID_ARGUMENT",
            `header.expected_count: the stream carried ${collector.size} entries, not ${expected}; nothing was applied`,
          ),
        );
      resolve({ ...started, collector });
    });
    call.on("cancelled", () => {
      failed = true;
      resolve(undefined);
    });
    call.on("error", () => {
      failed = true;
      resolve(undefined);
    });
  });
}

function targetOf(syncKind: SyncKind, header: SyncHeader | undefined): SyncTarget {
  if (!header) throw new ServiceError("INVALID_ARGUMENT", "header: is required");
  return { kind: syncKind, sourceId: header.sourceId, name: header.name, syncId: header.syncId };
}

function checkUserId(userId: string, field: string): string {
  if (userId.length === 0) throw new ServiceError("INVALID_ARGUMENT", `${field}: must not be empty`);
  if (userId.length > MAX_USER_ID_LENGTH)
    throw new ServiceError("INVALID_ARGUMENT", `${field}: must be at most ${MAX_USER_ID_LENGTH} characters`);
  return userId;
}

function valueJson(value: TraitValue): string {
  return JSON.stringify(value.value ?? null);
}

function removedSet(removed: string[], set: ReadonlySet<string>): Set<string> {
  const result = new Set<string>();
  removed.forEach((userId, i) => {
    checkUserId(userId, `removed_user_ids[${i}]`);
    if (set.has(userId)) throw new ServiceError("INVALID_ARGUMENT", `removed_user_ids[${i}]: "${userId}" is also being added or set`);
    result.add(userId);
  });
  return result;
}

/** Domain errors of the state code become clear gRPC errors (the registration's mapError). */
export function audienceErrors(error: unknown): unknown {
  if (error instanceof DuplicateUserError) return new ServiceError("INVALID_ARGUMENT", `user_ids: ${error.message}; nothing was applied`);
  if (error instanceof RangeError) return new ServiceError("INVALID_ARGUMENT", error.message);
  return error;
}
