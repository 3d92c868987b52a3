import { useEffect, useState } from "preact/hooks";
import { Config, rpc, type Connection, type Destination, type Source } from "../../api";
import type { PageProps } from "../../router";
import { Confirm, Empty, Link, Notice, PageHeader, formatCount } from "../../components";
import { DESTINATION_KINDS, kindOfDestination } from "./kinds";

/** Destinations: the catalog, the setup form (new: /destinations/new, edit: /destinations/<id>), the list. */
export function DestinationsPage({ subpath, query }: PageProps) {
  const [destinations, setDestinations] = useState<Destination[]>();
  const [sources, setSources] = useState<Source[]>([]);
  const [connections, setConnections] = useState<Connection[]>([]);
  const [loadError, setLoadError] = useState<string>();
  const [confirmDelete, setConfirmDelete] = useState<string>();
  const [message, setMessage] = useState<string>();

  const load = async () => {
    try {
      const [listed, sourceList, connected] = await Promise.all([
        rpc<{ destinations?: Destination[] }>(Config("ListDestinations")),
        rpc<{ sources?: Source[] }>(Config("ListSources")),
        rpc<{ connections?: Connection[] }>(Config("ListConnections")),
      ]);
      setDestinations((listed.destinations ?? []).sort((a, b) => a.id.localeCompare(b.id)));
      setSources((sourceList.sources ?? []).sort((a, b) => a.id.localeCompare(b.id)));
      setConnections(connected.connections ?? []);
      setLoadError(undefined);
    } catch (error) {
      setLoadError(error instanceof Error ? error.message : String(error));
    }
  };
  useEffect(() => void load(), [subpath]);

  const saved = query.get("saved");
  if (subpath !== "") {
    if (!destinations) return <p>Loading…</p>;
    const isNew = subpath === "new";
    const existing = isNew ? undefined : destinations.find((d) => d.id === decodeURIComponent(subpath));
    const kind = existing
      ? kindOfDestination(existing)
      : DESTINATION_KINDS.find((entry) => entry.type === (query.get("type") ?? "webhooks"));
    if (existing && !kind)
      return (
        <>
          <PageHeader title={`Edit ${existing.id}`} />
          <Notice kind="warning">
            {existing.id} is of a kind of destination this console does not know, so it cannot be edited here (a form of another kind would
            change its kind). Change it through the API, or with a console of the same version as the services.
          </Notice>
          <p>
            <Link to="/destinations">Back to destinations</Link>
          </p>
        </>
      );
    if ((!isNew && !existing) || !kind)
      return (
        <>
          <PageHeader title="Destination not found" />
          <p>
            There is no destination {isNew ? `type ${query.get("type")}` : decodeURIComponent(subpath)}.{" "}
            <Link to="/destinations">Back to destinations</Link>
          </p>
        </>
      );
    const connected = existing ? connections.filter((c) => c.destinationId === existing.id) : [];
    const connectedSources = connected.map((c) => c.sourceId);
    const filters = Object.fromEntries(connected.map((c) => [c.sourceId, c.filter]));
    return (
      <>
        <PageHeader title={existing ? `Edit ${existing.id}` : `New ${kind.name} destination`} />
        {loadError && <Notice kind="error">{loadError}</Notice>}
        <kind.Setup existing={existing} sources={sources} connectedSources={connectedSources} filters={filters} />
      </>
    );
  }

  const remove = async (id: string) => {
    try {
      await rpc(Config("DeleteDestination"), { id });
      setMessage(`Destination ${id} deleted.`);
    } catch (error) {
      setLoadError(error instanceof Error ? error.message : String(error));
    }
    setConfirmDelete(undefined);
    await load();
  };

  return (
    <>
      <PageHeader title="Destinations" />
      {loadError && <Notice kind="error">{loadError}</Notice>}
      {saved && !message && <Notice kind="success">Destination {saved} saved.</Notice>}
      {message && <Notice kind="success">{message}</Notice>}
      <section aria-labelledby="catalog-title">
        <h2 id="catalog-title">Add a destination</h2>
        <ul class="catalog">
          {DESTINATION_KINDS.map((entry) => (
            <li key={entry.type} class="card">
              <h3>{entry.name}</h3>
              <p>{entry.description}</p>
              <Link to={`/destinations/new?type=${entry.type}`} class="button">
                Set up {entry.name}
              </Link>
            </li>
          ))}
        </ul>
      </section>
      <section aria-labelledby="list-title">
        <h2 id="list-title">Your destinations</h2>
        {!destinations ? (
          <p>Loading…</p>
        ) : destinations.length === 0 ? (
          <Empty>No destinations yet.</Empty>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">Id</th>
                <th scope="col">Type</th>
                <th scope="col">Status</th>
                <th scope="col">URLs</th>
                <th scope="col">Signing</th>
                <th scope="col">Sources</th>
                <th scope="col">Rate limit</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {destinations.map((destination) => {
                const connected = connections.filter((c) => c.destinationId === destination.id).map((c) => c.sourceId);
                return (
                  <tr key={destination.id}>
                    <th scope="row">
                      <span class="mono">{destination.id}</span>
                      {destination.name && <div class="hint">{destination.name}</div>}
                    </th>
                    <td>{kindOfDestination(destination)?.name ?? "Unknown kind"}</td>
                    <td>
                      <span class={`badge ${destination.enabled ? "good" : "muted"}`}>{destination.enabled ? "Enabled" : "Disabled"}</span>
                    </td>
                    <td>
                      <ol class="urls">
                        {(kindOfDestination(destination)?.targets(destination) ?? []).map((target, index) => (
                          <li key={index} class="mono">
                            {target}
                          </li>
                        ))}
                      </ol>
                    </td>
                    <td>
                      {[destination.sharedSecret ? "X-Signature" : "", destination.standardWebhooks ? "Standard Webhooks" : ""]
                        .filter(Boolean)
                        .join(", ") || "unsigned"}
                    </td>
                    <td>
                      {connected.length === 0 ? "none" : connected.join(", ")}
                      {connections.some((c) => c.destinationId === destination.id && c.filter) && <span class="hint"> (filtered)</span>}
                    </td>
                    <td>{destination.maxRequestsPerSecond ? `${formatCount(destination.maxRequestsPerSecond)}/s` : "none"}</td>
                    <td class="actions">
                      {confirmDelete === destination.id ? (
                        <Confirm
                          message={`Delete ${destination.id}? It receives nothing more; its connections go.`}
                          confirmLabel={`Delete ${destination.id}`}
                          onConfirm={() => void remove(destination.id)}
                          onCancel={() => setConfirmDelete(undefined)}
                        />
                      ) : (
                        <>
                          <Link to={`/destinations/${encodeURIComponent(destination.id)}`} class="button secondary">
                            Edit
                          </Link>
                          <Link to={`/deliveries?destination=${encodeURIComponent(destination.id)}`} class="button secondary">
                            Deliveries
                          </Link>
                          <button type="button" class="danger" onClick={() => setConfirmDelete(destination.id)}>
                            Delete
                          </button>
                        </>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}
