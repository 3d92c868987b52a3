import { useEffect, useState } from "preact/hooks";
import { ApiError, Config, rpc, type Connection, type Source } from "../api";
import type { PageProps } from "../router";
import { Confirm, Empty, Field, Link, Notice, OneTimeSecret, PageHeader, formatTime } from "../components";
import { formErrors, NO_ERRORS, type FormErrors } from "../fields";
import { SourceSchemaPage } from "./source-schema";

interface Revealed {
  sourceId: string;
  writeKey: string;
  note: string;
}

/** Sources: list, create, rotate a write key (shown once), delete; a source's schema at /sources/<id>/schema. */
export function SourcesPage({ subpath }: PageProps) {
  const schemaOf = /^([^/]+)\/schema$/.exec(subpath);
  if (schemaOf) return <SourceSchemaPage sourceId={decodeURIComponent(schemaOf[1]!)} />;
  if (subpath !== "") return <SourceNotFound subpath={subpath} />;
  return <SourceList />;
}

function SourceNotFound({ subpath }: { subpath: string }) {
  return (
    <>
      <PageHeader title="Not found" />
      <p>
        There is no page at /sources/{subpath}. <Link to="/sources">Back to sources</Link>
      </p>
    </>
  );
}

function SourceList() {
  const [sources, setSources] = useState<Source[]>();
  const [connections, setConnections] = useState<Connection[]>([]);
  const [loadError, setLoadError] = useState<string>();
  // A new write key lives only here, until dismissed: never stored, never shown again.
  const [revealed, setRevealed] = useState<Revealed>();
  const [confirmDelete, setConfirmDelete] = useState<string>();
  const [rotating, setRotating] = useState<string>();
  const [message, setMessage] = useState<string>();

  const load = async () => {
    try {
      const [listed, connected] = await Promise.all([
        rpc<{ sources?: Source[] }>(Config("ListSources")),
        rpc<{ connections?: Connection[] }>(Config("ListConnections")),
      ]);
      setSources((listed.sources ?? []).sort((a, b) => a.id.localeCompare(b.id)));
      setConnections(connected.connections ?? []);
      setLoadError(undefined);
    } catch (error) {
      setLoadError(error instanceof Error ? error.message : String(error));
    }
  };
  useEffect(() => void load(), []);

  const remove = async (id: string) => {
    try {
      await rpc(Config("DeleteSource"), { id });
      setMessage(`Source ${id} deleted; its write keys no longer work.`);
    } catch (error) {
      setMessage(undefined);
      setLoadError(error instanceof Error ? error.message : String(error));
    }
    setConfirmDelete(undefined);
    await load();
  };

  return (
    <>
      <PageHeader title="Sources" />
      <p class="lead">A source is where calls come from: each has write keys its clients send with.</p>
      {loadError && <Notice kind="error">{loadError}</Notice>}
      {message && <Notice kind="success">{message}</Notice>}
      {revealed && (
        <OneTimeSecret
          label={`Write key of ${revealed.sourceId} (shown only now)`}
          value={revealed.writeKey}
          note={revealed.note}
          onDone={() => setRevealed(undefined)}
        />
      )}
      <CreateSourceForm
        onCreated={(source, writeKey) => {
          setMessage(undefined);
          setRevealed({
            sourceId: source.id,
            writeKey,
            note: "Copy it into your client's configuration now: Switchyard keeps only a digest and cannot show it again.",
          });
          void load();
        }}
      />
      <section aria-labelledby="list-title">
        <h2 id="list-title">All sources</h2>
        {!sources ? (
          <p>Loading…</p>
        ) : sources.length === 0 ? (
          <Empty>No sources yet.</Empty>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">Id</th>
                <th scope="col">Name</th>
                <th scope="col">Write keys</th>
                <th scope="col">Browser origins</th>
                <th scope="col">Blocked</th>
                <th scope="col">Destinations</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {sources.map((source) => {
                const destinations = connections.filter((c) => c.sourceId === source.id).map((c) => c.destinationId);
                return (
                  <tr key={source.id}>
                    <th scope="row" class="mono">
                      {source.id}
                    </th>
                    <td>{source.name ?? ""}</td>
                    <td>
                      {source.writeKeyCount ?? 0}
                      {source.retiringWriteKeyCount ? (
                        <span class="hint">
                          {" "}
                          (+{source.retiringWriteKeyCount} retiring until {formatTime(source.retiringWriteKeysExpireAt)})
                        </span>
                      ) : null}
                    </td>
                    <td>{source.allowedOrigins ? (source.allowedOrigins.origins ?? []).join(", ") || "none" : "any"}</td>
                    <td>
                      {[...(source.blocked?.types ?? []).map((type) => `all ${type}`), ...(source.blocked?.trackEvents ?? [])].join(", ") ||
                        "none"}
                    </td>
                    <td>
                      {destinations.length === 0
                        ? "none"
                        : destinations.map((id, index) => (
                            <span key={id}>
                              {index > 0 && ", "}
                              <Link to={`/destinations/${encodeURIComponent(id)}`}>{id}</Link>
                            </span>
                          ))}
                    </td>
                    <td class="actions">
                      {confirmDelete === source.id ? (
                        <Confirm
                          message={`Delete ${source.id}? Its write keys stop working and its connections go.`}
                          confirmLabel={`Delete ${source.id}`}
                          onConfirm={() => void remove(source.id)}
                          onCancel={() => setConfirmDelete(undefined)}
                        />
                      ) : rotating === source.id ? (
                        <RotateKeyForm
                          sourceId={source.id}
                          onCancel={() => setRotating(undefined)}
                          onRotated={(writeKey, expiresAt, graceSeconds) => {
                            setRotating(undefined);
                            setMessage(undefined);
                            setRevealed({
                              sourceId: source.id,
                              writeKey,
                              note:
                                graceSeconds > 0
                                  ? `The previous keys keep working until ${formatTime(expiresAt)}. Copy the new key now: it is not shown again.`
                                  : "The previous keys stopped working. Copy the new key now: it is not shown again.",
                            });
                            void load();
                          }}
                        />
                      ) : (
                        <>
                          <Link to={`/sources/${encodeURIComponent(source.id)}/schema`} class="button secondary">
                            Schema
                          </Link>
                          <Link to={`/debugger?source=${encodeURIComponent(source.id)}`} class="button secondary">
                            Debugger
                          </Link>
                          <button type="button" class="secondary" onClick={() => setRotating(source.id)}>
                            Rotate key
                          </button>
                          <button type="button" class="danger" onClick={() => setConfirmDelete(source.id)}>
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

function CreateSourceForm(props: { onCreated: (source: Source, writeKey: string) => void }) {
  const [id, setId] = useState("");
  const [name, setName] = useState("");
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    try {
      const created = await rpc<{ source: Source; writeKey: string }>(Config("CreateSource"), { id, name });
      setErrors(NO_ERRORS);
      setId("");
      setName("");
      props.onCreated(created.source, created.writeKey);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      setErrors(formErrors(error, (key) => key === "id" || key === "name"));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby="create-title" class="panel">
      <h2 id="create-title">New source</h2>
      <form onSubmit={(event) => void submit(event)} noValidate class="inline-form">
        {errors.general && <Notice kind="error">{errors.general}</Notice>}
        <Field label="Id" error={errors.byField.get("id")} hint="1-64 letters, digits, - or _. Calls are stored under it.">
          {(attributes) => <input {...attributes} name="id" value={id} onInput={(event) => setId(event.currentTarget.value)} />}
        </Field>
        <Field label="Name (optional)" error={errors.byField.get("name")}>
          {(attributes) => <input {...attributes} name="name" value={name} onInput={(event) => setName(event.currentTarget.value)} />}
        </Field>
        <button type="submit" disabled={busy}>
          {busy ? "Creating…" : "Create source"}
        </button>
      </form>
    </section>
  );
}

function RotateKeyForm(props: {
  sourceId: string;
  onRotated: (writeKey: string, expiresAt: string | undefined, graceSeconds: number) => void;
  onCancel: () => void;
}) {
  const [grace, setGrace] = useState("86400");
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const graceSeconds = Number(grace);
    // Proto3 JSON would read text as 0: a number is checked here, its range by the service.
    if (grace.trim() === "" || !Number.isInteger(graceSeconds) || graceSeconds < 0) {
      setErrors({ byField: new Map([["graceSeconds", "must be a whole number of seconds, 0 or more"]]), general: undefined });
      return;
    }
    setBusy(true);
    try {
      const rotated = await rpc<{ writeKey: string; previousKeysExpireAt?: string }>(Config("RotateWriteKey"), {
        sourceId: props.sourceId,
        graceSeconds,
      });
      props.onRotated(rotated.writeKey, rotated.previousKeysExpireAt, graceSeconds);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      setErrors(formErrors(error, (key) => key === "graceSeconds"));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      class="rotate"
      onSubmit={(event) => void submit(event)}
      noValidate
      onKeyDown={(event) => event.key === "Escape" && props.onCancel()}
    >
      {errors.general && <Notice kind="error">{errors.general}</Notice>}
      <Field
        label="Previous keys keep working for (seconds)"
        error={errors.byField.get("graceSeconds")}
        hint="0 stops them at once; at most 2592000 (30 days)."
      >
        {(attributes) => (
          <input
            {...attributes}
            name="graceSeconds"
            inputMode="numeric"
            value={grace}
            autoFocus
            onInput={(event) => setGrace(event.currentTarget.value)}
          />
        )}
      </Field>
      <button type="submit" disabled={busy}>
        Rotate write key
      </button>
      <button type="button" class="secondary" onClick={props.onCancel}>
        Cancel
      </button>
    </form>
  );
}
