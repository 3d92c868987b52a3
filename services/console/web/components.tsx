import type { ComponentChildren, JSX } from "preact";
import { useEffect, useId, useRef } from "preact/hooks";
import type { HttpHeader } from "./api";
import { onLinkClick } from "./router";

/** A labelled input with its hint and its error (announced, and tied to the input for screen readers). */
export function Field(props: {
  label: string;
  error?: string | undefined;
  hint?: ComponentChildren;
  children: (attributes: { id: string; "aria-invalid": boolean; "aria-describedby": string | undefined }) => JSX.Element;
}) {
  const id = useId();
  const hintId = props.hint ? `${id}-hint` : undefined;
  const errorId = props.error ? `${id}-error` : undefined;
  const describedBy = [hintId, errorId].filter(Boolean).join(" ") || undefined;
  return (
    <div class={`field${props.error ? " invalid" : ""}`}>
      <label for={id}>{props.label}</label>
      {props.children({ id, "aria-invalid": Boolean(props.error), "aria-describedby": describedBy })}
      {props.hint && (
        <p class="hint" id={hintId}>
          {props.hint}
        </p>
      )}
      {props.error && (
        <p class="field-error" id={errorId}>
          {props.error}
        </p>
      )}
    </div>
  );
}

/** A message for the whole form or page; errors are announced at once. */
export function Notice(props: { kind: "error" | "success" | "info" | "warning"; children: ComponentChildren; focus?: boolean }) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (props.focus) ref.current?.focus();
  }, [props.focus]);
  return (
    <div
      ref={ref}
      class={`notice ${props.kind}`}
      role={props.kind === "error" ? "alert" : "status"}
      tabIndex={props.focus ? -1 : undefined}
    >
      {props.children}
    </div>
  );
}

export function Link(props: { to: string; children: ComponentChildren; class?: string; current?: boolean }) {
  return (
    <a
      href={props.to}
      class={props.class}
      aria-current={props.current ? "page" : undefined}
      onClick={(event) => onLinkClick(event, props.to)}
    >
      {props.children}
    </a>
  );
}

export function PageHeader(props: { title: string; children?: ComponentChildren }) {
  return (
    <div class="page-header">
      <h1 tabIndex={-1} id="page-title">
        {props.title}
      </h1>
      {props.children && <div class="page-actions">{props.children}</div>}
    </div>
  );
}

/** Asks before something that cannot be undone; the confirming button takes the focus. */
export function Confirm(props: {
  message: ComponentChildren;
  confirmLabel: string;
  onConfirm: () => void;
  onCancel: () => void;
  busy?: boolean;
}) {
  const confirmRef = useRef<HTMLButtonElement>(null);
  useEffect(() => confirmRef.current?.focus(), []);
  return (
    <div
      class="confirm"
      role="alertdialog"
      aria-label={props.confirmLabel}
      onKeyDown={(event) => event.key === "Escape" && props.onCancel()}
    >
      <p>{props.message}</p>
      <button ref={confirmRef} type="button" class="danger" disabled={props.busy} onClick={props.onConfirm}>
        {props.confirmLabel}
      </button>
      <button type="button" class="secondary" onClick={props.onCancel}>
        Cancel
      </button>
    </div>
  );
}

/** A secret shown once: selectable, copyable, gone when dismissed. */
export function OneTimeSecret(props: { label: string; value: string; note: ComponentChildren; onDone: () => void }) {
  const ref = useRef<HTMLInputElement>(null);
  useEffect(() => {
    ref.current?.focus();
    ref.current?.select();
  }, []);
  const id = useId();
  return (
    <div class="notice success one-time" role="status">
      <label for={id}>{props.label}</label>
      <div class="secret-row">
        <input id={id} ref={ref} class="mono" readOnly value={props.value} onFocus={(event) => event.currentTarget.select()} />
        <button type="button" onClick={() => void navigator.clipboard?.writeText(props.value)}>
          Copy
        </button>
      </div>
      <p>{props.note}</p>
      <button type="button" class="secondary" onClick={props.onDone}>
        I have stored it
      </button>
    </div>
  );
}

export function Empty(props: { children: ComponentChildren }) {
  return <p class="empty">{props.children}</p>;
}

/** The headers of a request or response as sent, in order. */
export function HeadersTable({ headers, label }: { headers: HttpHeader[] | undefined; label: string }) {
  if (!headers?.length) return <p class="hint">No headers.</p>;
  return (
    <table class="headers">
      <caption>{label}</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Value</th>
        </tr>
      </thead>
      <tbody>
        {headers.map((header, index) => (
          <tr key={index}>
            <th scope="row" class="mono">
              {header.name}
            </th>
            <td class="mono wrap">{header.value}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

// Formatting

/** Base64 (proto3 JSON bytes) as text: UTF-8, JSON pretty-printed. */
export function bodyText(base64: string | undefined): string {
  if (!base64) return "";
  const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  const text = new TextDecoder().decode(bytes);
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

export function formatRate(perSecond: number): string {
  if (perSecond === 0) return "0";
  if (perSecond < 0.01) return "<0.01";
  return perSecond < 10 ? perSecond.toFixed(2) : perSecond.toFixed(1);
}

export function formatPercent(rate: number | null | undefined): string {
  if (rate === null || rate === undefined) return "–";
  const percent = rate * 100;
  return `${percent === 100 || percent === 0 ? percent.toFixed(0) : percent.toFixed(1)}%`;
}

export function formatTime(iso: string | undefined): string {
  if (!iso) return "–";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
}

export function formatCount(value: number | string | undefined): string {
  return Number(value ?? 0).toLocaleString();
}

/** "42 s", "12 min", "3 h". */
export function formatDuration(seconds: number): string {
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}
