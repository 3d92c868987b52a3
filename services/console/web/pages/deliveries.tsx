import { useEffect, useState } from "preact/hooks";
import { ApiError, Config, Delivery, rpc, type DeliveryAttempt, type Destination } from "../api";
import type { PageProps } from "../router";
import { bodyText, Empty, Field, HeadersTable, Notice, PageHeader, formatTime } from "../components";
import { formErrors, NO_ERRORS, type FormErrors } from "../fields";
import { navigate } from "../router";

const PAGE_SIZE = 25;
const OUTCOMES = [
  { outcome: "delivered", label: "Delivered" },
  { outcome: "retryable", label: "Failed, retried" },
  { outcome: "permanent", label: "Failed for good" },
  { outcome: "dead_lettered", label: "Dead-lettered" },
] as const;

/** The filters a page of attempts was asked with; a page token belongs to them. */
interface Filters {
  outcomes: string[];
  since: string;
  before: string;
}

/** datetime-local text (the browser's time zone) as an RFC 3339 time; empty stays empty. */
function isoOf(local: string): string | undefined {
  if (local.trim() === "") return undefined;
  const date = new Date(local);
  return Number.isNaN(date.getTime()) ? "invalid" : date.toISOString();
}

function outcomeBadge(outcome: string | undefined) {
  const label = OUTCOMES.find((entry) => entry.outcome === outcome)?.label ?? outcome ?? "–";
  return <span class={`badge ${outcome === "delivered" ? "good" : outcome === "retryable" ? "muted" : "bad"}`}>{label}</span>;
}

/** The attempt log: every request to a destination's URLs, newest first, a page at a time, each with its exchange. */
export function DeliveriesPage({ query }: PageProps) {
  const destinationId = query.get("destination") ?? "";
  const [destinations, setDestinations] = useState<Destination[]>([]);
  const [draft, setDraft] = useState<Filters>({ outcomes: [], since: "", before: "" });
  const [applied, setApplied] = useState<Filters>({ outcomes: [], since: "", before: "" });
  const [attempts, setAttempts] = useState<DeliveryAttempt[]>();
  // Tokens of the pages shown so far: the last is the current page's; "" is the newest page.
  const [tokens, setTokens] = useState<string[]>([""]);
  const [nextToken, setNextToken] = useState("");
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);
  const [open, setOpen] = useState<string>();
  const [busy, setBusy] = useState(false);

  const load = async (filters: Filters, pageTokens: string[]) => {
    setBusy(true);
    try {
      const since = isoOf(filters.since);
      const before = isoOf(filters.before);
      const local = new Map<string, string>();
      if (since === "invalid") local.set("since", "must be a date and time");
      if (before === "invalid") local.set("before", "must be a date and time");
      if (local.size > 0) {
        setErrors({ byField: local, general: undefined });
        return;
      }
      const listed = await rpc(Delivery("ListDeliveryAttempts"), {
        destinationId,
        limit: PAGE_SIZE,
        outcomes: filters.outcomes,
        ...(since ? { since } : {}),
        ...(before ? { before } : {}),
        pageToken: pageTokens.at(-1) ?? "",
      });
      setAttempts(listed.attempts ?? []);
      setNextToken(listed.nextPageToken ?? "");
      setTokens(pageTokens);
      setApplied(filters);
      setOpen(undefined);
      setErrors(NO_ERRORS);
    } catch (caught) {
      if (!(caught instanceof ApiError)) throw caught;
      setErrors(formErrors(caught, (key) => key === "since" || key === "before" || key === "outcomes"));
      requestAnimationFrame(() => (document.querySelector(".field.invalid input") as HTMLElement | null)?.focus());
    } finally {
      setBusy(false);
    }
  };
  useEffect(() => {
    setAttempts(undefined);
    void load(applied, [""]);
  }, [destinationId]);
  useEffect(() => {
    rpc<{ destinations?: Destination[] }>(Config("ListDestinations")).then(
      (listed) => setDestinations((listed.destinations ?? []).sort((a, b) => a.id.localeCompare(b.id))),
      () => undefined,
    );
  }, []);

  const toggleOutcome = (outcome: string, on: boolean) =>
    setDraft({ ...draft, outcomes: on ? [...draft.outcomes, outcome] : draft.outcomes.filter((o) => o !== outcome) });

  return (
    <>
      <PageHeader title="Deliveries" />
      <p class="lead">
        Every request made to a destination's URLs, newest first: what was sent and what came back. Secret header and query values are
        masked.
      </p>
      <div class="toolbar">
        <label for="destination-filter">Destination</label>
        <select
          id="destination-filter"
          value={destinationId}
          onChange={(event) =>
            navigate(event.currentTarget.value ? `/deliveries?destination=${encodeURIComponent(event.currentTarget.value)}` : "/deliveries")
          }
        >
          <option value="">All destinations</option>
          {destinations.map((destination) => (
            <option key={destination.id} value={destination.id}>
              {destination.id}
            </option>
          ))}
        </select>
      </div>
      <form
        class="inline-form"
        noValidate
        onSubmit={(event) => {
          event.preventDefault();
          void load(draft, [""]);
        }}
      >
        {errors.general && <Notice kind="error">{errors.general}</Notice>}
        <fieldset class={errors.byField.get("outcomes") ? "invalid" : undefined}>
          <legend>Outcomes (none checked: all)</legend>
          {OUTCOMES.map(({ outcome, label }) => (
            <div class="check" key={outcome}>
              <input
                id={`outcome-${outcome}`}
                type="checkbox"
                checked={draft.outcomes.includes(outcome)}
                onChange={(event) => toggleOutcome(outcome, event.currentTarget.checked)}
              />
              <label for={`outcome-${outcome}`}>{label}</label>
            </div>
          ))}
          {errors.byField.get("outcomes") && <p class="field-error">{errors.byField.get("outcomes")}</p>}
        </fieldset>
        <Field label="Since" error={errors.byField.get("since")} hint="Your time zone; empty: from the oldest kept.">
          {(attributes) => (
            <input
              {...attributes}
              type="datetime-local"
              step={1}
              value={draft.since}
              onInput={(event) => setDraft({ ...draft, since: event.currentTarget.value })}
            />
          )}
        </Field>
        <Field label="Before" error={errors.byField.get("before")} hint="Empty: up to now.">
          {(attributes) => (
            <input
              {...attributes}
              type="datetime-local"
              step={1}
              value={draft.before}
              onInput={(event) => setDraft({ ...draft, before: event.currentTarget.value })}
            />
          )}
        </Field>
        <button type="submit" disabled={busy}>
          Show attempts
        </button>
        <button type="button" class="secondary" disabled={busy} onClick={() => void load(applied, [""])}>
          Refresh
        </button>
      </form>
      {!attempts ? (
        !errors.general && <p>Loading…</p>
      ) : attempts.length === 0 ? (
        <Empty>No attempts{destinationId ? ` for ${destinationId}` : ""} with these filters.</Empty>
      ) : (
        <table class="attempts">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Outcome</th>
              <th scope="col">Destination</th>
              <th scope="col">URL</th>
              <th scope="col" class="num">
                Status
              </th>
              <th scope="col" class="num">
                Attempt
              </th>
              <th scope="col" class="num">
                Duration
              </th>
              <th scope="col">Call</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {attempts.map((attempt, index) => {
              const key = attempt.attemptId || `${attempt.messageId}/${attempt.attempt}/${index}`;
              return [
                <tr key={key} class="attempt-row" data-at={attempt.at}>
                  <td>{formatTime(attempt.at)}</td>
                  <td>{outcomeBadge(attempt.outcome)}</td>
                  <td class="mono">{attempt.destinationId}</td>
                  <td class="mono wrap">{attempt.url}</td>
                  <td class="num">{attempt.status || <span title={attempt.error}>–</span>}</td>
                  <td class="num">{attempt.attempt ?? ""}</td>
                  <td class="num">{attempt.latencyMs ?? 0} ms</td>
                  <td class="mono">{attempt.messageId}</td>
                  <td class="actions">
                    {attempt.attemptId && (
                      <button
                        type="button"
                        class="secondary"
                        aria-expanded={open === attempt.attemptId}
                        aria-controls={`attempt-${index}`}
                        onClick={() => setOpen(open === attempt.attemptId ? undefined : attempt.attemptId)}
                      >
                        {open === attempt.attemptId ? "Hide" : "Details"}
                      </button>
                    )}
                  </td>
                </tr>,
                open === attempt.attemptId && attempt.attemptId ? (
                  <tr key={`${key}-detail`} class="detail" id={`attempt-${index}`}>
                    <td colSpan={9}>
                      <AttemptDetail attemptId={attempt.attemptId} />
                    </td>
                  </tr>
                ) : null,
              ];
            })}
          </tbody>
        </table>
      )}
      <nav class="pager" aria-label="Pages of attempts">
        <button
          type="button"
          class="secondary"
          disabled={busy || tokens.length <= 1}
          onClick={() => void load(applied, tokens.slice(0, -1))}
        >
          Newer
        </button>
        <button
          type="button"
          class="secondary"
          disabled={busy || nextToken === ""}
          onClick={() => void load(applied, [...tokens, nextToken])}
        >
          Older
        </button>
        <span class="hint">Page {tokens.length}</span>
      </nav>
    </>
  );
}

/** One attempt with the request sent and the response received (GetDeliveryAttempt). */
function AttemptDetail({ attemptId }: { attemptId: string }) {
  const [attempt, setAttempt] = useState<DeliveryAttempt>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    rpc(Delivery("GetDeliveryAttempt"), { attemptId }).then(
      (found) => setAttempt(found.attempt ?? {}),
      (caught: unknown) => setError(caught instanceof Error ? caught.message : String(caught)),
    );
  }, [attemptId]);
  if (error) return <Notice kind="error">{error}</Notice>;
  if (!attempt) return <p>Loading…</p>;
  const exchange = attempt.exchange ?? {};
  const responseBody = bodyText(exchange.responseBody);
  return (
    <div class="attempt-detail">
      <dl>
        <dt>Outcome</dt>
        <dd>{outcomeBadge(attempt.outcome)}</dd>
        <dt>Attempt</dt>
        <dd>{attempt.attempt ?? ""}</dd>
        <dt>At</dt>
        <dd>{formatTime(attempt.at)}</dd>
        <dt>Duration</dt>
        <dd>{attempt.latencyMs ?? 0} ms</dd>
        <dt>Call</dt>
        <dd class="mono">{attempt.messageId}</dd>
        {attempt.error && (
          <>
            <dt>Error</dt>
            <dd>{attempt.error}</dd>
          </>
        )}
      </dl>
      <h3>Request</h3>
      <p class="mono wrap">
        {exchange.method ?? "POST"} {exchange.url ?? attempt.url}
      </p>
      <HeadersTable headers={exchange.requestHeaders} label="Request headers" />
      <pre class="json" aria-label="Request body">
        {bodyText(exchange.requestBody)}
      </pre>
      <h3>Response</h3>
      <p>Status {attempt.status ? attempt.status : "none (no response)"}</p>
      <HeadersTable headers={exchange.responseHeaders} label="Response headers" />
      {responseBody !== "" ? (
        <pre class="json" aria-label="Response body">
          {responseBody}
        </pre>
      ) : (
        <p class="hint">Empty body.</p>
      )}
      {exchange.responseBodyTruncated && <p class="hint">The body went on: only its first 4 KB are kept.</p>}
    </div>
  );
}
