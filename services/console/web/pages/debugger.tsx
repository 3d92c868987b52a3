import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { LiveCall } from "../../src/live/view-types";
import { Config, rpc, type Source } from "../api";
import type { PageProps } from "../router";
import { Empty, Notice, PageHeader, formatTime } from "../components";
import { useEventStream } from "../live";
import { navigate } from "../router";

/** Calls kept on the page; older ones drop off the end. */
const MAX_SHOWN = 500;

interface Row extends LiveCall {
  key: number;
  /** The call's JSON as text, for the search box. */
  text: string;
}

/** The calls of a source as they arrive, decoded; pausable and searchable. */
export function DebuggerPage({ query }: PageProps) {
  const sourceId = query.get("source") ?? "";
  const [sources, setSources] = useState<Source[]>();
  const [rows, setRows] = useState<Row[]>([]);
  const [paused, setPaused] = useState(false);
  const [held, setHeld] = useState<Row[]>([]);
  const [skipped, setSkipped] = useState(0);
  const [search, setSearch] = useState("");
  const [open, setOpen] = useState<number>();
  const counter = useRef(0);
  const pausedRef = useRef(paused);
  pausedRef.current = paused;

  useEffect(() => {
    rpc<{ sources?: Source[] }>(Config("ListSources")).then(
      (listed) => setSources((listed.sources ?? []).sort((a, b) => a.id.localeCompare(b.id))),
      () => setSources([]),
    );
  }, []);
  useEffect(() => {
    setRows([]);
    setHeld([]);
    setSkipped(0);
  }, [sourceId]);

  const state = useEventStream(sourceId ? `/api/live/calls?source=${encodeURIComponent(sourceId)}` : undefined, {
    ready: () => undefined,
    call: (data) => {
      const live = data as LiveCall;
      const row: Row = { ...live, key: ++counter.current, text: JSON.stringify(live.call).toLowerCase() };
      if (pausedRef.current) setHeld((previous) => [row, ...previous].slice(0, MAX_SHOWN));
      else setRows((previous) => [row, ...previous].slice(0, MAX_SHOWN));
    },
    skipped: (data) => setSkipped((previous) => previous + ((data as { count: number }).count ?? 0)),
    failed: () => undefined,
  });

  const resume = () => {
    setRows((previous) => [...held, ...previous].slice(0, MAX_SHOWN));
    setHeld([]);
    setPaused(false);
  };
  const needle = search.trim().toLowerCase();
  const shown = useMemo(() => (needle ? rows.filter((row) => row.text.includes(needle)) : rows), [rows, needle]);

  return (
    <>
      <PageHeader title="Live debugger">
        {sourceId && (
          <span class={`live-state ${state}`} role="status">
            {state === "live"
              ? paused
                ? "Paused"
                : `Listening to ${sourceId}`
              : state === "reconnecting"
                ? "Reconnecting…"
                : state === "closed"
                  ? "Disconnected"
                  : "Connecting…"}
          </span>
        )}
      </PageHeader>
      <p class="lead">Calls of one source as ingest stores them, decoded, newest first. Only calls arriving from now on are shown.</p>
      <div class="toolbar">
        <label for="debugger-source">Source</label>
        <select
          id="debugger-source"
          value={sourceId}
          onChange={(event) =>
            navigate(event.currentTarget.value ? `/debugger?source=${encodeURIComponent(event.currentTarget.value)}` : "/debugger")
          }
        >
          <option value="">Choose a source…</option>
          {(sources ?? []).map((source) => (
            <option key={source.id} value={source.id}>
              {source.id}
            </option>
          ))}
        </select>
        <label for="debugger-search">Search</label>
        <input
          id="debugger-search"
          type="search"
          placeholder="event, user id, property…"
          value={search}
          onInput={(event) => setSearch(event.currentTarget.value)}
        />
        <button type="button" disabled={!sourceId} onClick={() => (paused ? resume() : setPaused(true))} aria-pressed={paused}>
          {paused ? `Resume${held.length > 0 ? ` (${held.length} new)` : ""}` : "Pause"}
        </button>
        <button type="button" class="secondary" disabled={rows.length === 0} onClick={() => setRows([])}>
          Clear
        </button>
      </div>
      {skipped > 0 && (
        <Notice kind="warning">
          {skipped} calls arrived faster than the page shows them (over 200 a second) and were skipped here; they were stored and delivered
          as usual.
        </Notice>
      )}
      {!sourceId ? (
        <Empty>Choose a source to watch its calls.</Empty>
      ) : shown.length === 0 ? (
        <Empty>{rows.length === 0 ? `Waiting for calls of ${sourceId}…` : "No call matches the search."}</Empty>
      ) : (
        <table class="calls">
          <caption class="visually-hidden">Calls of {sourceId}, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Received</th>
              <th scope="col">Type</th>
              <th scope="col">Event or name</th>
              <th scope="col">User</th>
              <th scope="col">Message id</th>
              <th scope="col">
                <span class="visually-hidden">Details</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {shown.map((row) => {
              const call = row.call;
              const expanded = open === row.key;
              return [
                <tr key={row.key} class="call-row">
                  <td>{formatTime(row.receivedAt)}</td>
                  <td>
                    <span class="badge muted">{String(call.type ?? "")}</span>
                  </td>
                  <td>{String(call.event ?? call.name ?? call.groupId ?? "")}</td>
                  <td class="mono">{String(call.userId ?? call.anonymousId ?? "")}</td>
                  <td class="mono">{String(call.messageId ?? "")}</td>
                  <td>
                    <button
                      type="button"
                      class="secondary small"
                      aria-expanded={expanded}
                      onClick={() => setOpen(expanded ? undefined : row.key)}
                    >
                      {expanded ? "Hide" : "Show"}
                    </button>
                  </td>
                </tr>,
                expanded && (
                  <tr key={`${row.key}-json`} class="detail">
                    <td colSpan={6}>
                      <pre class="json" tabIndex={0} aria-label="The decoded call">
                        {JSON.stringify(call, null, 2)}
                      </pre>
                      <p class="hint">
                        Batch {row.batchId}, calls stream sequence {row.sequence}.
                      </p>
                    </td>
                  </tr>
                ),
              ];
            })}
          </tbody>
        </table>
      )}
    </>
  );
}
