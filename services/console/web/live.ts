import { useEffect, useRef, useState } from "preact/hooks";
import { currentSession } from "./api";

export type LiveState = "connecting" | "live" | "reconnecting" | "closed";

/**
 * Follows a server-sent events stream of the console while the component is shown. The
 * browser reconnects by itself after a drop; a stream the console refused (the session ended)
 * is not retried, and the session check then brings the sign-in page.
 */
export function useEventStream(url: string | undefined, handlers: Record<string, (data: unknown) => void>): LiveState {
  const [state, setState] = useState<LiveState>("connecting");
  const handlersRef = useRef(handlers);
  handlersRef.current = handlers;
  useEffect(() => {
    if (!url) {
      setState("closed");
      return;
    }
    setState("connecting");
    const source = new EventSource(url);
    const listeners: [string, (event: Event) => void][] = Object.keys(handlersRef.current).map((name) => [
      name,
      (event: Event) => {
        setState("live");
        handlersRef.current[name]?.(JSON.parse((event as MessageEvent<string>).data));
      },
    ]);
    for (const [name, listener] of listeners) source.addEventListener(name, listener);
    source.addEventListener("signed-out", () => {
      source.close();
      void currentSession();
    });
    source.onopen = () => setState("live");
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) {
        setState("closed");
        void currentSession();
      } else {
        setState("reconnecting");
      }
    };
    return () => source.close();
  }, [url]);
  return state;
}
