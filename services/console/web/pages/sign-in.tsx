import { useState } from "preact/hooks";
import { ApiError, signIn } from "../api";
import { Field, Notice } from "../components";

export function SignInPage(props: { expired: boolean; onSignedIn: () => void }) {
  const [secret, setSecret] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await signIn(secret);
      setSecret("");
      props.onSignedIn();
    } catch (caught) {
      setError(
        caught instanceof ApiError && caught.status === 401
          ? "Wrong admin token or password."
          : caught instanceof Error
            ? caught.message
            : String(caught),
      );
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="sign-in" id="main">
      <h1>Switchyard console</h1>
      {props.expired && !error && <Notice kind="info">Your session ended. Sign in again.</Notice>}
      <form onSubmit={(event) => void submit(event)} noValidate>
        <Field
          label="Admin token or password"
          error={error}
          hint="The admin token (SWITCHYARD_ADMIN_TOKEN, which npm start prints) or the console password, if one is set."
        >
          {(attributes) => (
            <input
              {...attributes}
              type="password"
              name="secret"
              autoComplete="current-password"
              required
              autoFocus
              value={secret}
              onInput={(event) => setSecret(event.currentTarget.value)}
            />
          )}
        </Field>
        <button type="submit" disabled={busy || secret === ""}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}
