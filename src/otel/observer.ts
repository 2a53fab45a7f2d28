import type { CallListener, RunContext, RunRequest } from '../app/attempt/types.js';

/** One `tools/call` request as the MCP conventions describe it. */
export interface ToolCallInfo {
  readonly tool: string;
  /** The JSON-RPC id. */
  readonly requestId: string | number;
  /** The request's `params._meta`: `traceparent` / `tracestate` there are the caller's span. */
  readonly meta: Readonly<Record<string, unknown>> | undefined;
  readonly protocolVersion: string | undefined;
}

/**
 * OpenTelemetry as the rest of the server sees it (start-otel.ts makes the one of a process, loaded
 * only when it is on): a span and a duration per `tools/call`, a listener per call for its
 * attempts, and the Prometheus text of the metrics.
 */
export interface Observer {
  /**
   * Run one `tools/call` under its SERVER span. `run` gets the `_meta` to pass down, whose
   * `traceparent` names that span (the call's attempts become its children). The answer's `isError`
   * and escalation go on the span.
   */
  toolCall<T>(info: ToolCallInfo, run: (meta: Record<string, unknown>) => Promise<T>): Promise<T>;
  /** A listener for one call's events: a span per attempt (and per batch job), and the metrics. */
  callListener(request: RunRequest, context: RunContext): CallListener;
  /** Read the queue's length when the metrics are collected. */
  watchQueue(view: () => { readonly running: number; readonly waiting: number }): void;
  /** The metrics in Prometheus' text format, or null when `/metrics` is not served. */
  readonly prometheus: (() => Promise<string>) | null;
  /** Export what is left, within about a second whatever the collector does; resolves, never rejects. */
  shutdown(): Promise<void>;
}
