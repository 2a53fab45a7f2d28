import type { Counter, Histogram, Meter } from '@opentelemetry/api';

// The metrics: the MCP and GenAI conventions' durations and token usage, and this server's own
// (attempts, escalations, circuits, the queue, model loads). Buckets follow the conventions' advice.

/** Seconds, for the GenAI durations (the conventions' advice). */
const GEN_AI_SECONDS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
/** Seconds, for `mcp.server.operation.duration`, long enough for a call that runs minutes. */
const MCP_SECONDS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600];
const TOKENS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304];
const QUEUE_SECONDS = [0.001, 0.01, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600];

/** A circuit's state as `ollama_runner.circuit.state`'s value. */
export const CIRCUIT_VALUE = { closed: 0, half_open: 1, open: 2 } as const;

export interface Instruments {
  readonly operationDuration: Histogram;
  readonly inferenceDuration: Histogram;
  readonly timeToFirstChunk: Histogram;
  readonly tokenUsage: Histogram;
  readonly attempts: Counter;
  readonly escalations: Counter;
  readonly loads: Counter;
  readonly queueWait: Histogram;
  /** The last circuit state each model's attempts reported, read when the metrics are collected. */
  readonly circuits: Map<string, keyof typeof CIRCUIT_VALUE>;
  /** The queue's length, read when the metrics are collected. */
  queue: (() => { readonly running: number; readonly waiting: number }) | null;
}

export function makeInstruments(meter: Meter): Instruments {
  const seconds = (name: string, description: string, buckets: number[]) =>
    meter.createHistogram(name, { unit: 's', description, advice: { explicitBucketBoundaries: buckets } });
  const instruments: Instruments = {
    operationDuration: seconds(
      'mcp.server.operation.duration',
      'Duration of an MCP request as the server handled it',
      MCP_SECONDS,
    ),
    inferenceDuration: seconds('gen_ai.client.inference.duration', 'Duration of an attempt, spawn to exit', GEN_AI_SECONDS),
    timeToFirstChunk: seconds(
      'gen_ai.client.inference.time_to_first_chunk',
      "Spawn to the answer's first byte: Ollama's queue, the load, reading the prompt",
      GEN_AI_SECONDS,
    ),
    tokenUsage: meter.createHistogram('gen_ai.client.token.usage', {
      unit: '{token}',
      description: 'Tokens per attempt, by gen_ai.token.type (input, output)',
      advice: { explicitBucketBoundaries: TOKENS },
    }),
    attempts: meter.createCounter('ollama_runner.attempts', { description: 'Attempts ended, by model and status' }),
    escalations: meter.createCounter('ollama_runner.escalations', {
      description: 'Results that told the caller to escalate, by reason',
    }),
    loads: meter.createCounter('ollama_runner.model.loads', { description: 'Attempts that loaded their model (cold loads)' }),
    queueWait: seconds('ollama_runner.queue.wait', "Time an attempt waited in this server's queue", QUEUE_SECONDS),
    circuits: new Map(),
    queue: null,
  };
  meter
    .createObservableGauge('ollama_runner.circuit.state', {
      description: "Each model's circuit as its last attempt saw it: 0 closed, 1 half open, 2 open",
    })
    .addCallback((result) => {
      for (const [model, state] of instruments.circuits) result.observe(CIRCUIT_VALUE[state], { 'gen_ai.request.model': model });
    });
  meter
    .createObservableGauge('ollama_runner.queue.length', {
      description: "Attempts in this server's queue, by ollama_runner.queue.state (running, waiting)",
    })
    .addCallback((result) => {
      const view = instruments.queue?.();
      if (view === undefined) return;
      result.observe(view.running, { 'ollama_runner.queue.state': 'running' });
      result.observe(view.waiting, { 'ollama_runner.queue.state': 'waiting' });
    });
  return instruments;
}
