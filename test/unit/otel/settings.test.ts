import { describe, expect, it } from 'vitest';
import { otelSettings, otelWanted } from '../../../src/otel/settings.js';

describe('whether OpenTelemetry is on', () => {
  const stdio = { http: false };

  it('off by default on stdio: nothing of the SDK is loaded', () => {
    expect(otelWanted(otelSettings({}, stdio))).toBe(false);
  });

  it('the OTLP endpoint turns traces and metrics on; a signal endpoint turns on its own', () => {
    expect(otelSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }, stdio)).toMatchObject({
      traces: true,
      otlpMetrics: true,
    });
    expect(otelSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' }, stdio)).toMatchObject({
      traces: true,
      otlpMetrics: false,
    });
    expect(otelSettings({ OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://c:4318/v1/metrics' }, stdio)).toMatchObject({
      traces: false,
      otlpMetrics: true,
    });
  });

  it('OTEL_SDK_DISABLED and the exporters set to none turn the exports off', () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(otelWanted(otelSettings({ ...env, OTEL_SDK_DISABLED: 'true' }, stdio))).toBe(false);
    expect(otelSettings({ ...env, OTEL_TRACES_EXPORTER: 'none' }, stdio)).toMatchObject({ traces: false, otlpMetrics: true });
  });

  it('--http serves /metrics (over tcp), whatever the exports', () => {
    expect(otelSettings({}, { http: true })).toMatchObject({ prometheus: true, transport: 'tcp', traces: false });
  });

  it('prompts and answers are captured only when asked for', () => {
    expect(otelSettings({}, stdio).captureContent).toBe(false);
    expect(otelSettings({ OLLAMA_MCP_OTEL_CAPTURE_CONTENT: '1' }, stdio).captureContent).toBe(true);
    expect(otelSettings({ OLLAMA_MCP_OTEL_CAPTURE_CONTENT: '0' }, stdio).captureContent).toBe(false);
  });
});
