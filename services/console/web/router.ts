import { useEffect, useState } from "preact/hooks";

/**
 * Pages live at real paths (/sources, /destinations/new, ...); the console answers every such
 * path with the app, and this keeps the address bar and the page in step with the History API.
 */
const listeners = new Set<() => void>();

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (to === location.pathname + location.search) return;
  if (options.replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  for (const listener of listeners) listener();
}

window.addEventListener("popstate", () => {
  for (const listener of listeners) listener();
});

/** The current path and query, re-rendering on every navigation. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const listener = () => setTick((tick) => tick + 1);
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }, []);
  return { path: location.pathname, query: new URLSearchParams(location.search) };
}

/** A link that navigates inside the app (and still opens in a new tab with a modifier key). */
export function onLinkClick(event: MouseEvent, to: string): void {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  event.preventDefault();
  navigate(to);
}

/** What a page gets of the route: the path below its own (e.g. "new" for /destinations/new) and the query. */
export interface PageProps {
  subpath: string;
  query: URLSearchParams;
}
