import type { FunctionComponent } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { currentSession, onSignedOut, signOut } from "./api";
import { Link, Notice } from "./components";
import { AudiencesPage } from "./pages/audiences";
import { DeadLettersPage } from "./pages/dead-letters";
import { DebuggerPage } from "./pages/debugger";
import { DeliveriesPage } from "./pages/deliveries";
import { DestinationsPage } from "./pages/destinations";
import { OverviewPage } from "./pages/overview";
import { SignInPage } from "./pages/sign-in";
import { SourcesPage } from "./pages/sources";
import { navigate, useLocation, type PageProps } from "./router";

/**
 * The console's pages. A page is one entry here: its path, the title in the navigation and the
 * tab, and its component; the navigation, the routing and the focus handling follow from it.
 */
export const PAGES: { path: string; title: string; component: FunctionComponent<PageProps> }[] = [
  { path: "/", title: "Overview", component: OverviewPage },
  { path: "/sources", title: "Sources", component: SourcesPage },
  { path: "/destinations", title: "Destinations", component: DestinationsPage },
  { path: "/deliveries", title: "Deliveries", component: DeliveriesPage },
  { path: "/dead-letters", title: "Dead letters", component: DeadLettersPage },
  { path: "/debugger", title: "Live debugger", component: DebuggerPage },
  { path: "/audiences", title: "Audiences", component: AudiencesPage },
];

function pageOf(path: string) {
  const page = PAGES.find((entry) => entry.path !== "/" && (path === entry.path || path.startsWith(`${entry.path}/`)));
  if (page) return { page, subpath: path.slice(page.path.length + 1) };
  return path === "/" ? { page: PAGES[0]!, subpath: "" } : undefined;
}

type SessionState = "checking" | "signed-in" | "signed-out";

/** Asked as soon as the script runs, before the first render, so the first page's data comes a step sooner. */
const firstSessionCheck = currentSession();

export function App() {
  const [session, setSession] = useState<SessionState>("checking");
  const [expired, setExpired] = useState(false);
  const [bootError, setBootError] = useState<string>();
  const { path, query } = useLocation();

  useEffect(() => {
    const stop = onSignedOut(() =>
      setSession((previous) => {
        if (previous === "signed-in") setExpired(true);
        return "signed-out";
      }),
    );
    firstSessionCheck.then(
      (info) => setSession(info ? "signed-in" : "signed-out"),
      (error: unknown) => setBootError(error instanceof Error ? error.message : String(error)),
    );
    return stop;
  }, []);

  const found = pageOf(path);
  const title = found ? found.page.title : "Not found";
  // Where the focus was last moved: on a freshly loaded page it stays at the top (the skip link comes first).
  const focusedFor = useRef<string | undefined>(undefined);
  useEffect(() => {
    document.title = `${session === "signed-in" ? title : "Sign in"} · Switchyard`;
    if (session === "checking") return;
    if (session === "signed-out") {
      focusedFor.current = "signed-out";
      return;
    }
    // After a navigation or a sign-in, the new page's heading takes the focus, so keyboard and screen reader users start there.
    if (focusedFor.current !== undefined && focusedFor.current !== path)
      document.getElementById("page-title")?.focus({ preventScroll: true });
    focusedFor.current = path;
  }, [path, session, title]);

  if (bootError) return <Notice kind="error">The console could not start: {bootError}</Notice>;
  if (session === "checking") return <p class="boot">Loading the Switchyard console…</p>;
  if (session === "signed-out")
    return (
      <SignInPage
        expired={expired}
        onSignedIn={() => {
          setExpired(false);
          setSession("signed-in");
        }}
      />
    );

  const Page = found?.page.component;
  return (
    <div class="shell">
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Switchyard</span>
        <nav aria-label="Console">
          <ul>
            {PAGES.map((page) => (
              <li key={page.path}>
                <Link to={page.path} current={found?.page === page}>
                  {page.title}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <button
          type="button"
          class="secondary sign-out"
          onClick={() =>
            void signOut().then(() => {
              setSession("signed-out");
              navigate("/");
            })
          }
        >
          Sign out
        </button>
      </header>
      <main id="main">
        {Page ? (
          <Page key={found.page.path} subpath={found.subpath} query={query} />
        ) : (
          <>
            <h1 tabIndex={-1} id="page-title">
              Not found
            </h1>
            <p>
              There is no page at {path}. <Link to="/">Go to the overview</Link>.
            </p>
          </>
        )}
      </main>
    </div>
  );
}
