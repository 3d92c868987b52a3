import { useEffect, useState } from "preact/hooks";
import { Audience, rpc, type AudienceState } from "../api";
import type { PageProps } from "../router";
import { Empty, Notice, PageHeader, formatCount, formatTime } from "../components";

/** Each audience and computed trait, with its size and what its last sync did. */
export function AudiencesPage(_props: PageProps) {
  const [audiences, setAudiences] = useState<AudienceState[]>();
  const [error, setError] = useState<string>();

  const load = async () => {
    try {
      const listed = await rpc<{ audiences?: AudienceState[] }>(Audience("ListAudiences"));
      setAudiences(listed.audiences ?? []);
      setError(undefined);
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    }
  };
  useEffect(() => void load(), []);

  return (
    <>
      <PageHeader title="Audiences">
        <button type="button" class="secondary" onClick={() => void load()}>
          Refresh
        </button>
      </PageHeader>
      <p class="lead">
        Audiences and computed traits synced through AudienceService. Each change reaches the source's destinations as an identify call.
      </p>
      {error && <Notice kind="error">{error}</Notice>}
      {!audiences ? (
        !error && <p>Loading…</p>
      ) : audiences.length === 0 ? (
        <Empty>
          Nothing synced yet. Sync an audience with{" "}
          <code>
            npx switchyard call AudienceService/SyncAudienceSnapshot
            {' \'[{"header":{"sourceId":"web-backend","name":"High Value Users","syncId":"s1"},"userIds":["u1"]}]\''}
          </code>
          .
        </Empty>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Kind</th>
              <th scope="col">Source</th>
              <th scope="col">Trait</th>
              <th scope="col" class="num">
                Members
              </th>
              <th scope="col">Last sync</th>
              <th scope="col" class="num">
                Calls emitted
              </th>
              <th scope="col">Applied</th>
            </tr>
          </thead>
          <tbody>
            {audiences.map((audience) => (
              <tr key={`${audience.sourceId}/${audience.kind}/${audience.trait ?? ""}/${audience.lastSync?.syncId ?? ""}`}>
                <th scope="row">{audience.name || <span class="hint">(named at its next sync)</span>}</th>
                <td>{audience.kind === "trait" ? "Computed trait" : "Audience"}</td>
                <td class="mono">{audience.sourceId}</td>
                <td class="mono">{audience.trait ?? ""}</td>
                <td class="num">{formatCount(audience.total)}</td>
                <td>
                  <span class="mono">{audience.lastSync?.syncId ?? ""}</span>
                  {audience.lastSync?.mode && <span class="hint"> ({audience.lastSync.mode})</span>}
                </td>
                <td class="num">{formatCount(audience.lastSync?.emitted)}</td>
                <td>{formatTime(audience.lastSync?.appliedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
