import { useEffect, useRef, useState } from "preact/hooks";
import type { LiveCall } from "../src/live/view-types";
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

/**
 * A source's newest calls, newest first: its last stored ones (up to `max`), then each as it
 * arrives. A reconnect sends the stored ones again; a call is kept once, by its messageId.
 */
export function useRecentCalls(sourceId: string | undefined, max: number): { calls: LiveCall[]; state: LiveState } {
  const [calls, setCalls] = useState<LiveCall[]>([]);
  useEffect(() => setCalls([]), [sourceId]);
  const state = useEventStream(sourceId ? `/api/live/calls?source=${encodeURIComponent(sourceId)}&recent=${max}` : undefined, {
    ready: () => undefined,
    call: (data) => {
      const live = data as LiveCall;
      setCalls((previous) =>
        [live, ...previous.filter((kept) => kept.call.messageId !== live.call.messageId || live.call.messageId === undefined)].slice(
          0,
          max,
        ),
      );
    },
    skipped: () => undefined,
    failed: () => undefined,
  });
  return { calls, state };
}
