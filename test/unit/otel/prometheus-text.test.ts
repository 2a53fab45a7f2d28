import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';
import { prometheusText } from '../../../src/otel/prometheus-text.js';

/** Metrics read on demand, as `/metrics` reads them. */
class PullReader extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

async function textOf(record: (provider: MeterProvider) => void): Promise<string> {
  const reader = new PullReader();
  const provider = new MeterProvider({ readers: [reader] });
  record(provider);
  const text = prometheusText((await reader.collect()).resourceMetrics);
  await provider.shutdown();
  return text;
}

describe('the Prometheus text of the metrics', () => {
  it('a counter ends in _total, its labels in Prometheus names', async () => {
    const text = await textOf((provider) => {
      const attempts = provider.getMeter('t').createCounter('ollama_runner.attempts', { description: 'Attempts ended' });
      attempts.add(2, { 'gen_ai.request.model': 'llama3.2', 'ollama_runner.status': 'ok' });
      attempts.add(1, { 'gen_ai.request.model': 'llama3.2', 'ollama_runner.status': 'timeout' });
    });
    expect(text).toBe(
      [
        '# HELP ollama_runner_attempts_total Attempts ended',
        '# TYPE ollama_runner_attempts_total counter',
        'ollama_runner_attempts_total{gen_ai_request_model="llama3.2",ollama_runner_status="ok"} 2',
        'ollama_runner_attempts_total{gen_ai_request_model="llama3.2",ollama_runner_status="timeout"} 1',
        '',
      ].join('\n'),
    );
  });

  it('a histogram in seconds ends in _seconds, with cumulative buckets, +Inf, _sum and _count', async () => {
    const text = await textOf((provider) => {
      const duration = provider.getMeter('t').createHistogram('gen_ai.client.inference.duration', {
        unit: 's',
        description: 'Duration',
        advice: { explicitBucketBoundaries: [1, 10] },
      });
      duration.record(0.5, { 'gen_ai.request.model': 'm' });
      duration.record(5, { 'gen_ai.request.model': 'm' });
      duration.record(50, { 'gen_ai.request.model': 'm' });
    });
    expect(text).toBe(
      [
        '# HELP gen_ai_client_inference_duration_seconds Duration',
        '# TYPE gen_ai_client_inference_duration_seconds histogram',
        'gen_ai_client_inference_duration_seconds_bucket{gen_ai_request_model="m",le="1"} 1',
        'gen_ai_client_inference_duration_seconds_bucket{gen_ai_request_model="m",le="10"} 2',
        'gen_ai_client_inference_duration_seconds_bucket{gen_ai_request_model="m",le="+Inf"} 3',
        'gen_ai_client_inference_duration_seconds_sum{gen_ai_request_model="m"} 55.5',
        'gen_ai_client_inference_duration_seconds_count{gen_ai_request_model="m"} 3',
        '',
      ].join('\n'),
    );
  });

  it('a gauge is a gauge; a unit in braces adds no suffix', async () => {
    const text = await textOf((provider) => {
      const meter = provider.getMeter('t');
      meter.createObservableGauge('ollama_runner.circuit.state').addCallback((result) => result.observe(2, { model: 'a' }));
      meter.createHistogram('gen_ai.client.token.usage', { unit: '{token}', advice: { explicitBucketBoundaries: [] } }).record(3);
    });
    expect(text).toContain('# TYPE ollama_runner_circuit_state gauge\nollama_runner_circuit_state{model="a"} 2\n');
    expect(text).toContain('# TYPE gen_ai_client_token_usage histogram\ngen_ai_client_token_usage_bucket{le="+Inf"} 1\n');
  });

  it('label values are escaped: a model name cannot break a line or a quote', async () => {
    const text = await textOf((provider) => {
      provider.getMeter('t').createCounter('c').add(1, { model: 'a"b\\c\nd' });
    });
    expect(text).toContain('c_total{model="a\\"b\\\\c\\nd"} 1\n');
    expect(text.split('\n').filter((line) => line.startsWith('c_total'))).toHaveLength(1);
  });

  it('metrics without a measurement say nothing', async () => {
    expect(await textOf((provider) => void provider.getMeter('t').createCounter('unused'))).toBe('');
  });
});
