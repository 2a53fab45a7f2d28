import { diag, DiagLogLevel, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Tracer } from '@opentelemetry/api';
import { setGlobalErrorHandler, W3CTraceContextPropagator } from '@opentelemetry/core';
import { defaultResource, detectResources, envDetector, resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import { MeterProvider, MetricReader, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { limitWarnings } from '../store/state/redis-warning-limiter.js';
import { ollamaServer, safeText, toolCallEndAttributes, toolCallSpan, type Attributes } from './attributes.js';
import { callSpans } from './call-spans.js';
import { makeInstruments, type Instruments } from './instruments.js';
import type { Observer, ToolCallInfo } from './observer.js';
import { prometheusText } from './prometheus-text.js';
import { samplerFor } from './sampler.js';
import type { OtelSettings } from './settings.js';

/** The most a shutdown waits for the last export: a collector that is down must not hold the exit. */
export const SHUTDOWN_WITHIN_MS = 1_000;
/** One stderr line per window at most for the SDK's complaints (an unreachable collector fails every export). */
const WARNING_WINDOW_MS = 60_000;

type Env = Readonly<Record<string, string | undefined>>;

interface StartOptions {
  readonly settings: OtelSettings;
  readonly service: { readonly name: string; readonly version: string };
  /** OLLAMA_HOST, for `server.address`. */
  readonly ollamaHost: string | undefined;
  /** One line on stderr. */
  readonly warn: (message: string) => void;
  readonly env?: Env;
}

/** The SDK, its exporters (only those configured) and the Observer the server uses. Loaded only when OTel is on. */
export async function startOtel(options: StartOptions): Promise<Observer> {
  const { settings } = options;
  quietDiagnostics(options.warn);
  const resource = resourceOf(options.service);
  const traces = settings.traces ? await tracesOf(resource, options) : null;
  const pull = settings.prometheus ? new PullReader() : null;
  const readers: MetricReader[] = pull === null ? [] : [pull];
  if (settings.otlpMetrics) readers.push(await otlpMetricReader(options.env ?? process.env));
  const meters = new MeterProvider({ resource, readers });
  const instruments = makeInstruments(meters.getMeter(options.service.name, options.service.version));
  const propagator = new W3CTraceContextPropagator();
  const parentOf = (meta: Readonly<Record<string, unknown>> | undefined): Context =>
    meta === undefined ? ROOT_CONTEXT : propagator.extract(ROOT_CONTEXT, meta, metaGetter);
  const tracer = traces?.getTracer(options.service.name, options.service.version) ?? null;
  const spansDeps = {
    tracer,
    instruments,
    server: ollamaServer(options.ollamaHost),
    captureContent: settings.captureContent,
    parentOf,
  };
  return {
    toolCall: (info, run) => observeToolCall({ tracer, instruments, propagator, parentOf, settings }, info, run),
    callListener: (request, context) => callSpans(spansDeps, request, context),
    watchQueue: (view) => void (instruments.queue = view),
    prometheus: pull === null ? null : async () => prometheusText((await pull.collect()).resourceMetrics),
    shutdown: () => withinMs(SHUTDOWN_WITHIN_MS, Promise.allSettled([traces?.shutdown(), meters.shutdown()])),
  };
}

/** The SDK's own diagnostics and export failures: one line each on stderr (never stdout), rate-limited. */
function quietDiagnostics(warn: (message: string) => void): void {
  const line = limitWarnings((message) => warn(`OpenTelemetry: ${message}`), { windowMs: WARNING_WINDOW_MS });
  const say = (message: string, ...args: unknown[]) =>
    line(safeText([message, ...args.map(describe)].join(' ').split('\n')[0]!.trim()));
  diag.setLogger({ error: say, warn: say, info: () => {}, debug: () => {}, verbose: () => {} }, DiagLogLevel.WARN);
  setGlobalErrorHandler((error) => line(safeText(`export failed: ${describe(error).split('\n')[0]!}`)));
}

function describe(value: unknown): string {
  if (value instanceof Error) return value.message || value.name;
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
}

/** This server as the resource, under what OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES say. */
function resourceOf(service: StartOptions['service']): Resource {
  const own = resourceFromAttributes({ 'service.name': service.name, 'service.version': service.version });
  return defaultResource()
    .merge(own)
    .merge(detectResources({ detectors: [envDetector] }));
}

async function tracesOf(resource: Resource, options: StartOptions): Promise<TracerProvider> {
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
  const env = options.env ?? process.env;
  const delay = Number(env.OTEL_BSP_SCHEDULE_DELAY);
  const processor = new BatchSpanProcessor({
    exporter: new OTLPTraceExporter(),
    scheduledDelayMillis: Number.isFinite(delay) && delay > 0 ? delay : 5_000,
  });
  return new TracerProvider({ resource, sampler: samplerFor(options.settings.sampler), spanProcessors: [processor] });
}

async function otlpMetricReader(env: Env): Promise<MetricReader> {
  const { OTLPMetricExporter } = await import('@opentelemetry/exporter-metrics-otlp-http');
  const interval = Number(env.OTEL_METRIC_EXPORT_INTERVAL);
  const exportIntervalMillis = Number.isFinite(interval) && interval > 0 ? interval : 60_000;
  return new PeriodicExportingMetricReader({
    exporter: new OTLPMetricExporter(),
    exportIntervalMillis,
    exportTimeoutMillis: Math.min(30_000, exportIntervalMillis),
  });
}

/** Metrics read when Prometheus scrapes `/metrics`. */
class PullReader extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

const metaGetter = {
  get: (carrier: Readonly<Record<string, unknown>>, key: string) => {
    const value = carrier[key];
    return typeof value === 'string' ? value : undefined;
  },
  keys: (carrier: Readonly<Record<string, unknown>>) => Object.keys(carrier),
};

interface ToolCallDeps {
  readonly tracer: Tracer | null;
  readonly instruments: Instruments;
  readonly propagator: W3CTraceContextPropagator;
  readonly parentOf: (meta: Readonly<Record<string, unknown>> | undefined) => Context;
  readonly settings: OtelSettings;
}

/**
 * One `tools/call` under its SERVER span (child of the caller's `_meta.traceparent`), and its
 * duration. The `_meta` passed down carries this span as its `traceparent`: the call's attempts are its children.
 */
async function observeToolCall<T>(
  deps: ToolCallDeps,
  info: ToolCallInfo,
  run: (meta: Record<string, unknown>) => Promise<T>,
): Promise<T> {
  const startedAt = performance.now();
  const { name, attributes } = toolCallSpan(info, deps.settings.transport);
  const parent = deps.parentOf(info.meta);
  const span = deps.tracer?.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent) ?? null;
  const meta: Record<string, unknown> = { ...info.meta };
  if (span !== null) {
    delete meta.traceparent;
    delete meta.tracestate;
    deps.propagator.inject(trace.setSpan(parent, span), meta, { set: (carrier, key, value) => (carrier[key] = value) });
  }
  let end: Attributes = {};
  try {
    const answer = await run(meta);
    end = toolCallEndAttributes(answer);
    if (end['error.type'] !== undefined) span?.setStatus({ code: SpanStatusCode.ERROR, message: 'tool_error' });
    return answer;
  } catch (error) {
    const type = error instanceof Error ? error.name || 'Error' : 'Error';
    end = { 'error.type': safeText(type) };
    span?.setStatus({ code: SpanStatusCode.ERROR, message: safeText(describe(error)) });
    throw error;
  } finally {
    span?.setAttributes(end);
    span?.end();
    const measured: Attributes = { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': attributes['gen_ai.tool.name']! };
    if (end['error.type'] !== undefined) measured['error.type'] = end['error.type'];
    deps.instruments.operationDuration.record((performance.now() - startedAt) / 1000, measured);
  }
}

/** `work`, or nothing once `ms` passed (the timer does not keep the process alive). */
function withinMs(ms: number, work: Promise<unknown>): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    void work.finally(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
