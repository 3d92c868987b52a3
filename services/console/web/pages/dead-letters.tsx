import { useEffect, useState } from "preact/hooks";
import type { Call } from "@switchyard/contracts/json";
import { Config, Delivery, rpc, type DeadLetterEntry, type Destination } from "../api";
import type { PageProps } from "../router";
import { Confirm, Empty, Notice, PageHeader, formatCount, formatTime } from "../components";
import { navigate } from "../router";

const PAGE_SIZE = 100;

/** Dead letters: list (by destination), inspect, replay one, a selection, or all of a destination. */
export function DeadLettersPage({ query }: PageProps) {
  const destinationId = query.get("destination") ?? "";
  const [destinations, setDestinations] = useState<Destination[]>([]);
  const [entries, setEntries] = useState<DeadLetterEntry[]>();
  const [next, setNext] = useState(0);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [open, setOpen] = useState<string>();
  const [error, setError] = useState<string>();
  const [message, setMessage] = useState<string>();
  const [confirmAll, setConfirmAll] = useState(false);
  const [busy, setBusy] = useState(false);

  const load = async (after = 0) => {
    try {
      const listed = await rpc<{ entries?: DeadLetterEntry[]; nextAfterSequence?: number | string }>(Delivery("ListDeadLetters"), {
        destinationId,
        afterSequence: after,
        limit: PAGE_SIZE,
      });
      setEntries((previous) => [...(after > 0 ? (previous ?? []) : []), ...(listed.entries ?? [])]);
      setNext(Number(listed.nextAfterSequence ?? 0));
      setError(undefined);
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    }
  };
  useEffect(() => {
    setSelected(new Set());
    setEntries(undefined);
    void load();
  }, [destinationId]);
  useEffect(() => {
    rpc<{ destinations?: Destination[] }>(Config("ListDestinations")).then(
      (listed) => setDestinations((listed.destinations ?? []).sort((a, b) => a.id.localeCompare(b.id))),
      () => undefined,
    );
  }, []);

  const replay = async (request: { sequences?: string[]; destinationId?: string }, what: string) => {
    setBusy(true);
    try {
      const result = await rpc(Delivery("ReplayDeadLetters"), { ...request, sequences: request.sequences?.map(Number) });
      setMessage(`Replayed ${formatCount(result.replayed ?? 0)} ${what}: they are delivered again with a fresh retry window.`);
      setSelected(new Set());
      setError(undefined);
    } catch (caught) {
      setMessage(undefined);
      setError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      setBusy(false);
      setConfirmAll(false);
      await load();
    }
  };

  const toggle = (sequence: string) => {
    const copy = new Set(selected);
    if (copy.has(sequence)) copy.delete(sequence);
    else copy.add(sequence);
    setSelected(copy);
  };
  const all = entries ?? [];
  const allSelected = all.length > 0 && all.every((entry) => selected.has(String(entry.sequence)));

  return (
    <>
      <PageHeader title="Dead letters" />
      <p class="lead">
        Calls that could not be delivered within the retry window, or that a URL refused for good. Replaying one delivers it again.
      </p>
      {error && <Notice kind="error">{error}</Notice>}
      {message && <Notice kind="success">{message}</Notice>}
      <div class="toolbar">
        <label for="destination-filter">Destination</label>
        <select
          id="destination-filter"
          value={destinationId}
          onChange={(event) =>
            navigate(
              event.currentTarget.value ? `/dead-letters?destination=${encodeURIComponent(event.currentTarget.value)}` : "/dead-letters",
            )
          }
        >
          <option value="">All destinations</option>
          {destinations.map((destination) => (
            <option key={destination.id} value={destination.id}>
              {destination.id}
            </option>
          ))}
        </select>
        <button
          type="button"
          disabled={busy || selected.size === 0}
          onClick={() => void replay({ sequences: [...selected] }, "selected dead letters")}
        >
          Replay selected ({selected.size})
        </button>
        {destinationId && !confirmAll && (
          <button type="button" class="secondary" disabled={busy || all.length === 0} onClick={() => setConfirmAll(true)}>
            Replay all of {destinationId}
          </button>
        )}
        <button type="button" class="secondary" onClick={() => void load()}>
          Refresh
        </button>
      </div>
      {confirmAll && (
        <Confirm
          message={`Replay every dead letter of ${destinationId}?`}
          confirmLabel={`Replay all of ${destinationId}`}
          busy={busy}
          onConfirm={() => void replay({ destinationId }, `dead letters of ${destinationId}`)}
          onCancel={() => setConfirmAll(false)}
        />
      )}
      {!entries ? (
        <p>Loading…</p>
      ) : entries.length === 0 ? (
        <Empty>No dead letters{destinationId ? ` for ${destinationId}` : ""}.</Empty>
      ) : (
        <table class="dead-letters">
          <thead>
            <tr>
              <th scope="col">
                <input
                  type="checkbox"
                  aria-label="Select every dead letter shown"
                  checked={allSelected}
                  onChange={() => setSelected(allSelected ? new Set() : new Set(all.map((entry) => String(entry.sequence))))}
                />
              </th>
              <th scope="col">Dead since</th>
              <th scope="col">Destination</th>
              <th scope="col">Call</th>
              <th scope="col">Reason</th>
              <th scope="col">Last attempt</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {entries.map((entry) => {
              const sequence = String(entry.sequence);
              const letter = entry.deadLetter ?? {};
              const call = letter.task?.call ?? {};
              const last = letter.lastAttempt;
              const expanded = open === sequence;
              return [
                <tr key={sequence}>
                  <td>
                    <input
                      type="checkbox"
                      aria-label={`Select dead letter ${sequence}`}
                      checked={selected.has(sequence)}
                      onChange={() => toggle(sequence)}
                    />
                  </td>
                  <td>{formatTime(letter.deadAt)}</td>
                  <td class="mono">{letter.task?.destinationId}</td>
                  <td>
                    <span class="mono">{callSummary(call)}</span>
                    <div class="hint mono">{String(call.messageId ?? "")}</div>
                  </td>
                  <td>{letter.reason?.replace(/_/g, " ")}</td>
                  <td>
                    {last ? (last.status ? `HTTP ${last.status}` : last.error) : "–"}
                    <div class="hint">{letter.attempts ?? 0} attempts</div>
                  </td>
                  <td class="actions">
                    <button
                      type="button"
                      class="secondary"
                      aria-expanded={expanded}
                      aria-controls={`dead-letter-${sequence}`}
                      onClick={() => setOpen(expanded ? undefined : sequence)}
                    >
                      {expanded ? "Hide" : "Inspect"}
                    </button>
                    <button type="button" disabled={busy} onClick={() => void replay({ sequences: [sequence] }, "dead letter")}>
                      Replay
                    </button>
                  </td>
                </tr>,
                expanded && (
                  <tr key={`${sequence}-detail`} id={`dead-letter-${sequence}`} class="detail">
                    <td colSpan={7}>
                      <dl>
                        <dt>Source</dt>
                        <dd class="mono">{letter.task?.sourceId}</dd>
                        {last && (
                          <>
                            <dt>Last attempt</dt>
                            <dd>
                              {formatTime(last.at)}: <span class="mono">{last.url}</span>,{" "}
                              {last.status ? `HTTP ${last.status}` : last.error} after {last.latencyMs ?? 0} ms ({last.outcome})
                            </dd>
                          </>
                        )}
                        <dt>Sequence</dt>
                        <dd class="mono">{sequence}</dd>
                      </dl>
                      <pre class="json" tabIndex={0} aria-label="The call">
                        {JSON.stringify(call, null, 2)}
                      </pre>
                    </td>
                  </tr>
                ),
              ];
            })}
          </tbody>
        </table>
      )}
      {next > 0 && (
        <button type="button" class="secondary" onClick={() => void load(next)}>
          Load more
        </button>
      )}
    </>
  );
}

/** "track Signed Up (u1)": the call's type, name and user, from its proto3 JSON. */
function callSummary(call: Call): string {
  const type = ["identify", "track", "page", "screen", "group", "alias", "delete"].find((kind) => kind in call) ?? "call";
  const payload = ((call as Record<string, unknown>)[type] ?? {}) as Record<string, unknown>;
  const name = payload.event ?? payload.name ?? payload.groupId ?? "";
  const user = call.userId ?? call.anonymousId ?? "";
  return [type, name, user ? `(${String(user)})` : ""].filter(Boolean).join(" ");
}
