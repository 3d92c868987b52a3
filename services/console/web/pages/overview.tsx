import { useState } from "preact/hooks";
import type { OverviewSnapshot } from "../../src/live/view-types";
import type { PageProps } from "../router";
import { Empty, formatCount, formatDuration, formatPercent, formatRate, formatTime, Link, Notice, PageHeader } from "../components";
import { useEventStream } from "../live";

/** Calls and deliveries of the last hour, failing destinations and dead letters, refreshed live. */
export function OverviewPage(_props: PageProps) {
  const [snapshot, setSnapshot] = useState<OverviewSnapshot>();
  const state = useEventStream("/api/live/overview", { overview: (data) => setSnapshot(data as OverviewSnapshot) });

  const totalPerSecond = snapshot?.sources.reduce((sum, source) => sum + source.callsPerSecondLastMinute, 0) ?? 0;
  const failing = snapshot?.destinations.filter((destination) => destination.failing) ?? [];
  return (
    <>
      <PageHeader title="Overview">
        <span class={`live-state ${state}`} role="status">
          {state === "live" ? "Live" : state === "reconnecting" ? "Reconnecting…" : state === "closed" ? "Disconnected" : "Connecting…"}
        </span>
      </PageHeader>
      {!snapshot ? (
        <p>Loading…</p>
      ) : (
        <>
          {!snapshot.caughtUp && <Notice kind="info">Counting the last hour from the bus; figures grow until it is done.</Notice>}
          {!snapshot.deliveryCountersFresh && (
            <Notice kind="warning">The delivery service does not answer: delivered counts and success rates are not current.</Notice>
          )}
          <section class="tiles" aria-label="Totals">
            <div class="tile">
              <span class="tile-value">{formatRate(totalPerSecond)}</span>
              <span class="tile-label">calls/s, last minute</span>
            </div>
            <div class={`tile${failing.length > 0 ? " bad" : ""}`}>
              <span class="tile-value">{failing.length}</span>
              <span class="tile-label">failing destinations</span>
            </div>
            <div class={`tile${snapshot.deadLetters > 0 ? " warn" : ""}`}>
              <span class="tile-value">{formatCount(snapshot.deadLetters)}</span>
              <span class="tile-label">
                <Link to="/dead-letters">dead letters</Link> waiting
              </span>
            </div>
          </section>

          {failing.length > 0 && (
            <section aria-labelledby="failing-title" class="failing">
              <h2 id="failing-title">Failing destinations</h2>
              <ul>
                {failing.map((destination) => (
                  <li key={destination.id}>
                    <strong>{destination.name || destination.id}</strong>: {formatPercent(destination.successRate)} of requests succeeded in
                    the last {formatDuration(destination.windowSeconds)}
                    {destination.lastFailure && (
                      <>
                        ; last failure {formatTime(destination.lastFailure.at)}:{" "}
                        <span class="mono">
                          {destination.lastFailure.status ? `HTTP ${destination.lastFailure.status}` : destination.lastFailure.error}
                        </span>{" "}
                        from <span class="mono">{destination.lastFailure.url}</span>
                      </>
                    )}
                    . <Link to={`/dead-letters?destination=${encodeURIComponent(destination.id)}`}>Dead letters</Link>
                  </li>
                ))}
              </ul>
            </section>
          )}

          <section aria-labelledby="sources-title">
            <h2 id="sources-title">Sources</h2>
            {snapshot.sources.length === 0 ? (
              <Empty>
                No sources yet. <Link to="/sources">Create one</Link>.
              </Empty>
            ) : (
              <table>
                <caption class="visually-hidden">Calls per source over the last hour</caption>
                <thead>
                  <tr>
                    <th scope="col">Source</th>
                    <th scope="col" class="num">
                      Calls/s (last minute)
                    </th>
                    <th scope="col" class="num">
                      Calls/s (hour)
                    </th>
                    <th scope="col" class="num">
                      Calls (hour)
                    </th>
                    <th scope="col" class="num">
                      Delivered without failure
                    </th>
                    <th scope="col" class="num">
                      Destinations
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {snapshot.sources.map((source) => (
                    <tr key={source.id}>
                      <th scope="row">
                        <Link to={`/debugger?source=${encodeURIComponent(source.id)}`}>{source.name || source.id}</Link>
                      </th>
                      <td class="num">{formatRate(source.callsPerSecondLastMinute)}</td>
                      <td class="num">{formatRate(source.callsPerSecond)}</td>
                      <td class="num">{formatCount(source.callsLastHour)}</td>
                      <td class={`num${source.successRate !== null && source.successRate < 0.99 ? " bad-text" : ""}`}>
                        {source.failedCallsCapped ? "≤ " : ""}
                        {formatPercent(source.successRate)}
                      </td>
                      <td class="num">{source.destinations}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>

          <section aria-labelledby="destinations-title">
            <h2 id="destinations-title">Destinations</h2>
            {snapshot.destinations.length === 0 ? (
              <Empty>
                No destinations yet. <Link to="/destinations">Add one</Link>.
              </Empty>
            ) : (
              <table>
                <caption class="visually-hidden">Deliveries per destination</caption>
                <thead>
                  <tr>
                    <th scope="col">Destination</th>
                    <th scope="col">Status</th>
                    <th scope="col" class="num">
                      Requests/s
                    </th>
                    <th scope="col" class="num">
                      Success rate
                    </th>
                    <th scope="col" class="num">
                      Delivered
                    </th>
                    <th scope="col" class="num">
                      Failed attempts
                    </th>
                    <th scope="col" class="num">
                      Dead letters
                    </th>
                    <th scope="col">Window</th>
                  </tr>
                </thead>
                <tbody>
                  {snapshot.destinations.map((destination) => (
                    <tr key={destination.id} class={destination.failing ? "row-bad" : undefined}>
                      <th scope="row">
                        <Link to={`/destinations/${encodeURIComponent(destination.id)}`}>{destination.name || destination.id}</Link>
                      </th>
                      <td>
                        <span class={`badge ${!destination.enabled ? "muted" : destination.failing ? "bad" : "good"}`}>
                          {!destination.enabled ? "Disabled" : destination.failing ? "Failing" : "Healthy"}
                        </span>
                      </td>
                      <td class="num">{formatRate(destination.requestsPerSecond)}</td>
                      <td class="num">{formatPercent(destination.successRate)}</td>
                      <td class="num">{formatCount(destination.delivered)}</td>
                      <td class="num">{formatCount(destination.failedAttempts)}</td>
                      <td class="num">
                        {destination.deadLetters > 0 ? (
                          <Link to={`/dead-letters?destination=${encodeURIComponent(destination.id)}`}>
                            {formatCount(destination.deadLetters)}
                          </Link>
                        ) : (
                          "0"
                        )}
                      </td>
                      <td>{destination.windowSeconds > 0 ? formatDuration(destination.windowSeconds) : "starting"}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            <p class="hint">
              Sources: the last hour of the calls stream. Destinations: delivery's counters since the console started reading them, up to an
              hour (the window column); failures from the delivery log. Updated {formatTime(snapshot.generatedAt)}.
            </p>
          </section>
        </>
      )}
    </>
  );
}
