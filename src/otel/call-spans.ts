import { SpanKind, SpanStatusCode, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import type { CallEvent, CallListener, RunContext, RunRequest } from '../app/attempt/types.js';
import type { RunResult } from '../app/reply/run-result.js';
import {
  attemptAttributes,
  attemptSpanName,
  endedAttributes,
  ollamaServer,
  OPERATION,
  PROVIDER,
  safeText,
  type Attributes,
} from './attributes.js';
import type { Instruments } from './instruments.js';

export interface CallSpansDeps {
  /** null: traces are off, only the metrics are recorded. */
  readonly tracer: Tracer | null;
  readonly instruments: Instruments;
  readonly server: { readonly address: string; readonly port: number };
  readonly captureContent: boolean;
  /** The context the call runs in: its tools/call span, from the `traceparent` of the `_meta` passed down. */
  readonly parentOf: (meta: RunContext['meta']) => Context;
}

/**
 * One call's listener: a CLIENT span per attempt (under a span per job when the call is a batch's
 * job, else under the tools/call span), with the queue, start, cold load and first byte as its
 * events, and the metrics of each attempt once it ended. An attempt its call goes past stays open
 * until the call says what it does next (a busy wait, the next model), which ends it.
 */
export function callSpans(deps: CallSpansDeps, request: RunRequest, context: RunContext): CallListener {
  const { tracer } = deps;
  const parent = deps.parentOf(context.meta);
  const job = tracer !== null && context.batchId !== undefined ? jobSpan(tracer, request, context.batchId, parent) : null;
  const under = job === null ? parent : trace.setSpan(parent, job);
  const open = new Map<string, Span>();
  const reached = new Set<string>();
  /** The host each attempt was sent to, with several hosts. */
  const sentTo = new Map<string, string>();
  return (event) => {
    const { runId } = event.attempt;
    if (event.type === 'queued' || event.type === 'started') reached.add(runId);
    if (event.type === 'started' && event.host) sentTo.set(runId, event.host);
    if (event.type === 'ended') {
      const host = sentTo.get(runId);
      sentTo.delete(runId);
      const server = host === undefined ? deps.server : ollamaServer(host);
      recordMetrics({ ...deps, server }, event.result, event.willRetry, reached.delete(runId));
    }
    if (tracer === null || event.type === 'output') return;
    let span = open.get(runId);
    if (span === undefined) {
      span = tracer.startSpan(
        attemptSpanName(event.attempt),
        { kind: SpanKind.CLIENT, attributes: attemptAttributes(event.attempt, deps.server) },
        under,
      );
      open.set(runId, span);
    }
    if (tellSpan(span, event, deps.captureContent ? { prompt: request.prompt } : null)) {
      span.end();
      open.delete(runId);
    }
    // The job ends with its call's last attempt, after it.
    if (event.type === 'ended' && !event.willRetry && job !== null) endJob(job, event.result);
  };
}

/** Put one event on its attempt's span; true once the span is complete. */
function tellSpan(span: Span, event: CallEvent, content: { prompt: string } | null): boolean {
  switch (event.type) {
    case 'queued': {
      const reason = event.reason();
      span.addEvent('queued', reason === null ? {} : { 'ollama_runner.queue.reason': reason.kind });
      return false;
    }
    case 'waiting_for_probe':
    case 'first_byte':
      span.addEvent(event.type);
      return false;
    case 'started':
      // With several Ollama hosts (OLLAMA_MCP_HOSTS), the one this attempt was sent to.
      if (event.host) {
        const server = ollamaServer(event.host);
        span.setAttributes({ 'server.address': server.address, 'server.port': server.port });
      }
      span.addEvent('started', { 'ollama_runner.cold': event.cold });
      if (event.cold) span.addEvent('cold_load');
      return false;
    case 'ended': {
      span.setAttributes(endedAttributes(event.result, event.willRetry, content));
      const { ok, status, error } = event.result.metadata;
      if (!ok) span.setStatus({ code: SpanStatusCode.ERROR, message: safeText(error?.message ?? status) });
      return !event.willRetry;
    }
    case 'busy_wait':
      span.addEvent('busy_wait', { 'ollama_runner.retry': event.retry, 'ollama_runner.wait_ms': event.waitMs });
      return true;
    case 'next_model':
      span.addEvent('next_model', { 'ollama_runner.next_model': safeText(event.next) });
      return true;
    default:
      return false;
  }
}

/** The span of one job of a batch, under the batch's tools/call span. */
function jobSpan(tracer: Tracer, request: RunRequest, batchId: string, parent: Context): Span {
  const attributes: Attributes = { 'ollama_runner.batch_id': batchId, 'gen_ai.request.model': safeText(request.model) };
  if (request.taskId !== undefined) attributes['ollama_runner.task_id'] = safeText(request.taskId);
  return tracer.startSpan('ollama_run_many job', { kind: SpanKind.INTERNAL, attributes }, parent);
}

function endJob(span: Span, result: RunResult): void {
  const { ok, status, escalate, escalation_reason } = result.metadata;
  span.setAttributes({ 'ollama_runner.status': status, 'ollama_runner.escalate': escalate });
  if (escalation_reason !== null) span.setAttribute('ollama_runner.escalation_reason', escalation_reason);
  if (!ok) span.setAttributes({ 'error.type': status });
  if (!ok) span.setStatus({ code: SpanStatusCode.ERROR, message: status });
  span.end();
}

/** The metrics of one ended attempt; `queued`: it reached the queue (a refusal never does). */
function recordMetrics(deps: CallSpansDeps, result: RunResult, willRetry: boolean, queued: boolean): void {
  const { instruments, server } = deps;
  const { metadata } = result;
  const model = safeText(metadata.model);
  instruments.attempts.add(1, { 'gen_ai.request.model': model, 'ollama_runner.status': metadata.status });
  instruments.circuits.set(model, metadata.circuit.state);
  if (metadata.escalate && !willRetry) {
    instruments.escalations.add(1, { 'ollama_runner.escalation_reason': metadata.escalation_reason ?? 'unknown' });
  }
  if (queued) instruments.queueWait.record(metadata.queue_ms / 1000, { 'gen_ai.request.model': model });
  if (metadata.cold_load) instruments.loads.add(1, { 'gen_ai.request.model': model });
  if (metadata.duration_ms <= 0) return;
  const common: Attributes = {
    'gen_ai.operation.name': OPERATION,
    'gen_ai.provider.name': PROVIDER,
    'gen_ai.request.model': model,
    'server.address': server.address,
  };
  instruments.inferenceDuration.record(
    metadata.duration_ms / 1000,
    metadata.ok ? common : { ...common, 'error.type': metadata.status },
  );
  if (metadata.start_ms !== null) instruments.timeToFirstChunk.record(metadata.start_ms / 1000, common);
  const { prompt_tokens, output_tokens } = metadata.usage;
  if (prompt_tokens !== null) instruments.tokenUsage.record(prompt_tokens, { ...common, 'gen_ai.token.type': 'input' });
  if (output_tokens !== null) instruments.tokenUsage.record(output_tokens, { ...common, 'gen_ai.token.type': 'output' });
}
