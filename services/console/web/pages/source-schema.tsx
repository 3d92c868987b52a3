import { useEffect, useState } from "preact/hooks";
import {
  ApiError,
  Config,
  Insights,
  rpc,
  type BlockedCalls,
  type SchemaEntry,
  type Source,
  type SourceSchema,
  type SourceUsage,
} from "../api";
import { Empty, Field, Link, Notice, PageHeader, formatCount, formatTime } from "../components";
import { formErrors, NO_ERRORS, type FormErrors } from "../fields";

/** The call types a source can block, in the order the page lists them. */
const CALL_TYPES = ["track", "identify", "page", "screen", "group", "alias"] as const;

/** Whether a source's blocks cover an entry: its whole type, or (track) its event name. */
function isBlocked(blocked: BlockedCalls | undefined, type: string, name?: string): boolean {
  if (blocked?.types?.includes(type)) return true;
  return type === "track" && name !== undefined && name !== "" && (blocked?.trackEvents?.includes(name) ?? false);
}

function sum(entries: SchemaEntry[], pick: (entry: SchemaEntry) => number | string | undefined): number {
  return entries.reduce((total, entry) => total + Number(pick(entry) ?? 0), 0);
}

/**
 * One source's schema (/sources/<id>/schema): the calls it sent, by type and name, with their
 * counts and keys; one-click blocks of a track event or a whole call type; usage per UTC day.
 */
export function SourceSchemaPage({ sourceId }: { sourceId: string }) {
  const [source, setSource] = useState<Source>();
  const [schema, setSchema] = useState<SourceSchema>();
  const [loadError, setLoadError] = useState<string>();
  const [schemaError, setSchemaError] = useState<string>();
  const [actionError, setActionError] = useState<string>();
  const [message, setMessage] = useState<string>();
  const [busy, setBusy] = useState<string>();
  // Bumped by Refresh, so the usage section reads again too.
  const [tick, setTick] = useState(0);

  const load = async () => {
    try {
      const found = await rpc<{ source: Source }>(Config("GetSource"), { id: sourceId });
      setSource(found.source);
      setLoadError(undefined);
    } catch (error) {
      setLoadError(error instanceof Error ? error.message : String(error));
      return;
    }
    try {
      setSchema(await rpc<SourceSchema>(Insights("GetSourceSchema"), { sourceId }));
      setSchemaError(undefined);
    } catch (error) {
      setSchemaError(error instanceof Error ? error.message : String(error));
    }
  };
  useEffect(() => void load(), [sourceId]);

  /** Blocks or unblocks calls; the source's answer carries its new blocks, which mark the rows at once. */
  const change = async (action: "block" | "unblock", what: BlockedCalls, label: string) => {
    setBusy(label);
    setActionError(undefined);
    try {
      const changed = await rpc<{ source: Source }>(
        Config(action === "block" ? "BlockCalls" : "UnblockCalls"),
        action === "block" ? { sourceId, block: what } : { sourceId, unblock: what },
      );
      setSource(changed.source);
      setMessage(action === "block" ? `Blocked ${label}: new calls are accepted but forwarded nowhere.` : `Unblocked ${label}.`);
    } catch (error) {
      setMessage(undefined);
      setActionError(error instanceof Error ? error.message : String(error));
    } finally {
      setBusy(undefined);
    }
  };

  const entries = schema?.entries ?? [];
  const blocked = source?.blocked;
  const overflow = entries.filter((entry) => entry.overflow);

  return (
    <>
      <PageHeader title={`Schema of ${sourceId}`}>
        <button
          type="button"
          class="secondary"
          onClick={() => {
            setTick(tick + 1);
            void load();
          }}
        >
          Refresh
        </button>
        <Link to="/sources" class="button secondary">
          All sources
        </Link>
      </PageHeader>
      <p class="lead">
        What this source has sent, by call type and name, as the insights service counted it. A blocked call is still accepted (its client
        does not retry it) but reaches no destination; it is counted as filtered.
      </p>
      {loadError && <Notice kind="error">{loadError}</Notice>}
      {actionError && <Notice kind="error">{actionError}</Notice>}
      {message && <Notice kind="success">{message}</Notice>}
      {source && (
        <>
          <section aria-labelledby="types-title">
            <h2 id="types-title">Call types</h2>
            <table class="call-types">
              <thead>
                <tr>
                  <th scope="col">Type</th>
                  <th scope="col" class="num">
                    Last 24 h
                  </th>
                  <th scope="col" class="num">
                    Total
                  </th>
                  <th scope="col" class="num">
                    Filtered
                  </th>
                  <th scope="col">Status</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {CALL_TYPES.map((type) => {
                  const ofType = entries.filter((entry) => entry.type === type);
                  const typeBlocked = blocked?.types?.includes(type) ?? false;
                  const label = `all ${type} calls`;
                  return (
                    <tr key={type} class={typeBlocked ? "row-blocked" : undefined}>
                      <th scope="row" class="mono">
                        {type}
                      </th>
                      <td class="num">{formatCount(sum(ofType, (e) => e.count24h))}</td>
                      <td class="num">{formatCount(sum(ofType, (e) => e.countTotal))}</td>
                      <td class="num">{formatCount(sum(ofType, (e) => e.filteredTotal))}</td>
                      <td>{typeBlocked ? <span class="badge bad">Blocked</span> : <span class="badge good">Forwarded</span>}</td>
                      <td class="actions">
                        <BlockToggle
                          blocked={typeBlocked}
                          label={label}
                          disabled={busy !== undefined}
                          onToggle={(action) => void change(action, { types: [type] }, label)}
                        />
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </section>

          <section aria-labelledby="calls-title">
            <h2 id="calls-title">Calls by name</h2>
            {schemaError ? (
              <Notice kind="error">The schema could not be read: {schemaError}</Notice>
            ) : !schema ? (
              <p>Loading…</p>
            ) : entries.length === 0 ? (
              <Empty>No calls from {sourceId} yet.</Empty>
            ) : (
              <>
                <p class="hint">
                  Most recently seen first. Counts updated {formatTime(schema.updatedAt)}. At most {formatCount(schema.nameLimit)} names are
                  kept per source.
                </p>
                {overflow.length > 0 && (
                  <Notice kind="warning">
                    This source sent more than {formatCount(schema.nameLimit)} distinct names: calls with further names are counted together
                    in the “other names” entries ({overflow.map((entry) => entry.type).join(", ")}).
                  </Notice>
                )}
                <table class="schema">
                  <thead>
                    <tr>
                      <th scope="col">Type</th>
                      <th scope="col">Event or name</th>
                      <th scope="col" class="num">
                        24 h
                      </th>
                      <th scope="col" class="num">
                        7 days
                      </th>
                      <th scope="col" class="num">
                        Total
                      </th>
                      <th scope="col" class="num">
                        Filtered
                      </th>
                      <th scope="col">First seen</th>
                      <th scope="col">Last seen</th>
                      <th scope="col">Keys</th>
                      <th scope="col">
                        <span class="visually-hidden">Actions</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {entries.map((entry) => {
                      const name = entry.name ?? "";
                      const entryBlocked = isBlocked(blocked, entry.type, name);
                      const byType = blocked?.types?.includes(entry.type) ?? false;
                      const canBlockName = entry.type === "track" && !entry.overflow && name !== "";
                      return (
                        <tr key={`${entry.type}/${entry.overflow ? "*" : name}`} class={entryBlocked ? "row-blocked" : undefined}>
                          <td class="mono">{entry.type}</td>
                          <th scope="row">
                            {entry.overflow ? (
                              <em>other names (over the limit)</em>
                            ) : name ? (
                              <span class="mono">{name}</span>
                            ) : (
                              <span class="hint">(no name)</span>
                            )}
                            {entryBlocked && (
                              <>
                                {" "}
                                <span class="badge bad">{byType ? "Blocked (type)" : "Blocked"}</span>
                              </>
                            )}
                          </th>
                          <td class="num">{formatCount(entry.count24h)}</td>
                          <td class="num">{formatCount(entry.count7d)}</td>
                          <td class="num total">{formatCount(entry.countTotal)}</td>
                          <td class="num filtered">{formatCount(entry.filteredTotal)}</td>
                          <td>{formatTime(entry.firstSeen)}</td>
                          <td>{formatTime(entry.lastSeen)}</td>
                          <td>
                            {(entry.keys ?? []).length === 0 ? (
                              <span class="hint">none</span>
                            ) : (
                              <ul class="keys">
                                {(entry.keys ?? []).map((key) => (
                                  <li key={key.key}>
                                    <span class="mono">{key.key}</span> <span class="hint">{(key.types ?? []).join(" | ")}</span>
                                  </li>
                                ))}
                              </ul>
                            )}
                          </td>
                          <td class="actions">
                            {canBlockName && !byType && (
                              <BlockToggle
                                blocked={entryBlocked}
                                label={name}
                                disabled={busy !== undefined}
                                onToggle={(action) => void change(action, { trackEvents: [name] }, name)}
                              />
                            )}
                          </td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              </>
            )}
          </section>
          <UsageSection sourceId={sourceId} tick={tick} />
        </>
      )}
    </>
  );
}

/** Usage per UTC day: what ingest accepted, filtered and rejected, and what each destination got. */
/** One click blocks what is forwarded, or unblocks what is blocked; the label names what, for screen readers. */
function BlockToggle(props: { blocked: boolean; label: string; disabled: boolean; onToggle: (action: "block" | "unblock") => void }) {
  const verb = props.blocked ? "Unblock" : "Block";
  return (
    <button
      type="button"
      class={props.blocked ? "secondary" : "danger"}
      disabled={props.disabled}
      aria-label={`${verb} ${props.label}`}
      onClick={() => props.onToggle(props.blocked ? "unblock" : "block")}
    >
      {verb}
    </button>
  );
}

function UsageSection({ sourceId, tick }: { sourceId: string; tick: number }) {
  const [fromDay, setFromDay] = useState("");
  const [toDay, setToDay] = useState("");
  const [days, setDays] = useState<SourceUsage[]>();
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);
  const [busy, setBusy] = useState(false);

  const load = async (event?: Event) => {
    event?.preventDefault();
    setBusy(true);
    try {
      const usage = await rpc<{ days?: SourceUsage[] }>(Insights("GetUsage"), { sourceId, fromDay, toDay });
      // Newest day first: the one people look for.
      setDays((usage.days ?? []).filter((day) => day.sourceId === sourceId).reverse());
      setErrors(NO_ERRORS);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      setErrors(formErrors(error, (key) => key === "fromDay" || key === "toDay"));
    } finally {
      setBusy(false);
    }
  };
  useEffect(() => void load(), [sourceId, tick]);

  const perDestination = (days ?? []).flatMap((day) => (day.destinations ?? []).map((destination) => ({ day: day.day, ...destination })));
  return (
    <section aria-labelledby="usage-title">
      <h2 id="usage-title">Usage per day (UTC)</h2>
      <form class="inline-form" onSubmit={(event) => void load(event)} noValidate>
        {errors.general && <Notice kind="error">{errors.general}</Notice>}
        <Field label="From day" error={errors.byField.get("fromDay")} hint="YYYY-MM-DD; empty: 30 days back.">
          {(attributes) => (
            <input
              {...attributes}
              name="fromDay"
              placeholder="YYYY-MM-DD"
              value={fromDay}
              onInput={(e) => setFromDay(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field label="To day" error={errors.byField.get("toDay")} hint="Empty: today.">
          {(attributes) => (
            <input {...attributes} name="toDay" placeholder="YYYY-MM-DD" value={toDay} onInput={(e) => setToDay(e.currentTarget.value)} />
          )}
        </Field>
        <button type="submit" disabled={busy}>
          Show usage
        </button>
      </form>
      {!days ? (
        !errors.general && <p>Loading…</p>
      ) : days.length === 0 ? (
        <Empty>No usage counted for {sourceId} in these days.</Empty>
      ) : (
        <>
          <table class="usage">
            <caption>Calls of {sourceId}</caption>
            <thead>
              <tr>
                <th scope="col">Day</th>
                <th scope="col" class="num">
                  Accepted
                </th>
                <th scope="col" class="num">
                  Filtered at the source
                </th>
                <th scope="col" class="num">
                  Rejected
                </th>
              </tr>
            </thead>
            <tbody>
              {days.map((day) => (
                <tr key={day.day}>
                  <th scope="row" class="mono">
                    {day.day}
                  </th>
                  <td class="num accepted">{formatCount(day.accepted)}</td>
                  <td class="num filtered">{formatCount(day.filtered)}</td>
                  <td class="num">{formatCount(day.rejected)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {perDestination.length > 0 && (
            <table class="usage-destinations">
              <caption>Per destination</caption>
              <thead>
                <tr>
                  <th scope="col">Day</th>
                  <th scope="col">Destination</th>
                  <th scope="col" class="num">
                    Delivered
                  </th>
                  <th scope="col" class="num">
                    Filtered
                  </th>
                  <th scope="col" class="num">
                    Failed requests
                  </th>
                  <th scope="col" class="num">
                    Dead-lettered
                  </th>
                </tr>
              </thead>
              <tbody>
                {perDestination.map((row) => (
                  <tr key={`${row.day}/${row.destinationId}`}>
                    <td class="mono">{row.day}</td>
                    <th scope="row">
                      <Link to={`/deliveries?destination=${encodeURIComponent(row.destinationId)}`}>{row.destinationId}</Link>
                    </th>
                    <td class="num">{formatCount(row.delivered)}</td>
                    <td class="num">{formatCount(row.filtered)}</td>
                    <td class="num">{formatCount(row.failed)}</td>
                    <td class="num">{formatCount(row.deadLettered)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}
    </section>
  );
}
