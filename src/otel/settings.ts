/**
 * Whether OpenTelemetry is on, from the standard `OTEL_*` variables and how the server serves. Pure,
 * and free of the SDK: the CLI reads this first and loads the SDK (start-otel.ts) only when it is on.
 */

type Env = Readonly<Record<string, string | undefined>>;

export interface OtelSettings {
  /** OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set. */
  readonly traces: boolean;
  /** OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is set. */
  readonly otlpMetrics: boolean;
  /** `/metrics` is served: the `--http` server. */
  readonly prometheus: boolean;
  /** OLLAMA_MCP_OTEL_CAPTURE_CONTENT=1: prompts and answers go on the attempt spans. */
  readonly captureContent: boolean;
  /** `pipe` for stdio, `tcp` for `--http` (the MCP conventions' `network.transport`). */
  readonly transport: 'pipe' | 'tcp';
  /** OTEL_TRACES_SAMPLER and its argument, as given (start-otel.ts reads them). */
  readonly sampler: { readonly name: string; readonly arg: string | undefined };
}

export const CAPTURE_CONTENT_VARIABLE = 'OLLAMA_MCP_OTEL_CAPTURE_CONTENT';

const set = (value: string | undefined) => value !== undefined && value.trim() !== '';
const TRUE = new Set(['1', 'true', 'yes', 'on']);

export function otelSettings(env: Env, serving: { readonly http: boolean }): OtelSettings {
  const disabled = env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true';
  const any = set(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  return {
    traces: !disabled && (any || set(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)) && env.OTEL_TRACES_EXPORTER !== 'none',
    otlpMetrics: !disabled && (any || set(env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT)) && env.OTEL_METRICS_EXPORTER !== 'none',
    prometheus: serving.http,
    captureContent: TRUE.has(env[CAPTURE_CONTENT_VARIABLE]?.trim().toLowerCase() ?? ''),
    transport: serving.http ? 'tcp' : 'pipe',
    sampler: { name: env.OTEL_TRACES_SAMPLER?.trim().toLowerCase() || 'parentbased_always_on', arg: env.OTEL_TRACES_SAMPLER_ARG },
  };
}

/** Is anything of OpenTelemetry wanted? When not, nothing of it is loaded. */
export function otelWanted(settings: OtelSettings): boolean {
  return settings.traces || settings.otlpMetrics || settings.prometheus;
}
