import { rm } from 'node:fs/promises';
import { join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { listRunLogFiles } from '../../../src/telemetry/log-files.js';
import { summarizeRuns } from '../../../src/report/summary.js';
import { runsSummarySchema, type RunsSummary } from '../../../src/report/summary-schema.js';
import { BASIC_DIR, NOW, record, ROTATED_DIR, writeLog } from '../../helpers/run-log-fixtures.js';
import { tempDir } from '../../helpers/temp-dir.js';

async function summarize(dir: string, filters: Parameters<typeof summarizeRuns>[1] = {}, limits = {}): Promise<RunsSummary> {
  const summary = await summarizeRuns(await listRunLogFiles(dir), filters, { now: NOW, limits });
  runsSummarySchema.parse(summary); // always the documented shape
  return summary;
}

const model = (summary: RunsSummary, name: string) => summary.models.find((m) => m.model === name);

/** Within 1% (the documented bound) of the exact nearest-rank value. */
function near(actual: number | null, expected: number): void {
  expect(actual).not.toBeNull();
  expect(Math.abs(actual! - expected)).toBeLessThanOrEqual(expected * 0.01);
}

let tmp: string;
beforeEach(async () => {
  tmp = tempDir('report-summary-');
});
afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('summarizeRuns on test/fixtures/runs/basic', () => {
  it('counts runs, skipped, blank and foreign lines; torn last line, old and future shapes included', async () => {
    const s = await summarize(BASIC_DIR);
    expect(s.schema).toBe(2);
    expect(s.generated_at).toBe(NOW.toISOString());
    expect(s.filters).toEqual({ since: null, model: null, task: null, status: null });
    expect(s.files).toEqual(['runs.jsonl']);
    expect(s.range).toEqual({ first_ts: '2025-11-22T10:00:00.000Z', last_ts: '2025-11-22T10:12:00.000Z' });
    expect(s.total_runs).toBe(14);
    expect(s.total_ok).toBe(7);
    expect(s.total_escalations).toBe(3);
    expect(s.skipped_lines).toBe(2); // `[1,2,3]` and the torn last line
    expect(s.blank_lines).toBe(1);
    expect(s.unrecognized_records).toBe(1); // {"hello":"world"}
    expect(s.models_truncated).toBe(false);
    expect(s.escalated_tasks_truncated).toBe(false);
    expect(s.escalations_without_task).toBe(1);
  });

  it('gives one row per canonical model, most runs first, field by field', async () => {
    const s = await summarize(BASIC_DIR);
    expect(s.models.map((m) => [m.model, m.runs])).toEqual([
      ['qwen3:8b', 9],
      ['llama3.2:latest', 4], // llama3.2, llama3.2:latest and library/llama3.2:latest together
      ['bad model!', 1], // not a model name: kept as logged
    ]);
    const qwen = model(s, 'qwen3:8b')!;
    expect(qwen).toMatchObject({
      runs: 9,
      ok: 5,
      ok_pct: 55.6,
      timeouts: 3,
      failures: { timeout: 3, crashed: 1 },
      escalations: 1,
      circuit_openings: 0,
      spawned: 8, // the v:0 record without duration_ms did not spawn as far as we know
    });
    // spawned durations: 500 900 1000 1500 4000 120000 120010 120020
    near(qwen.duration_ms.p50, 1500);
    expect(qwen.duration_ms.p95).toBe(120_020); // rank 8 of 8: the exact max
    expect(qwen.duration_ms.max).toBe(120_020);
    expect(qwen.queue_ms.p50).toBe(0); // 0 0 0 0 0 2 5 (the v:0 record has no queue_ms)
    // <=100ms <=250ms <=500ms <=1s <=2.5s <=5s <=10s <=30s <=1m <=2m <=5m <=10m >10m; bounds inclusive
    expect(qwen.duration_histogram).toEqual([0, 0, 1, 2, 1, 1, 0, 0, 0, 1, 2, 0, 0]);

    const llama = model(s, 'llama3.2:latest')!;
    expect(llama).toMatchObject({
      runs: 4,
      ok: 2,
      ok_pct: 50,
      timeouts: 0,
      failures: { empty_output: 1, circuit_open: 1 },
      escalations: 2,
      circuit_openings: 1,
      spawned: 3,
      duration_ms: { p95: 3000, max: 3000 }, // 800 2000 3000
      queue_ms: { p50: 10 }, // 0 10 20: small whole numbers come out exact
    });
    near(llama.duration_ms.p50, 2000);
    expect(llama.duration_histogram).toEqual([0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]);
    expect(s.duration_buckets_ms).toEqual([100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 120000, 300000, 600000]);
    expect(Object.keys(llama.failures)).toEqual(['empty_output', 'circuit_open']); // the failure table's status order

    expect(model(s, 'bad model!')).toEqual({
      model: 'bad model!',
      runs: 1,
      ok: 0,
      ok_pct: 0,
      timeouts: 0,
      failures: { invalid_input: 1 },
      escalations: 0,
      circuit_openings: 0,
      spawned: 0,
      duration_ms: { p50: null, p95: null, max: null },
      duration_histogram: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
      queue_ms: { p50: null },
      ok_duration_ms: { p50: null, p95: null, max: null },
      lost_ms: 0,
      lost_attempts: 0,
      retried: { busy_retries: 0, fell_through: 0 },
      tokens: {
        runs: 0,
        output_tokens: 0,
        prompt_tokens: 0,
        output_tps_p50: null,
        prompt_tokens_p95: null,
        cold_loads: 0,
        may_be_truncated: 0,
      },
    });
  });

  it('counts spawned runs per fixed duration bucket: bounds inclusive, the last bucket open', async () => {
    const durations = [0.5, 100, 100.5, 250, 999, 1000, 1001, 59_999, 60_000, 600_000, 600_001, 86_400_000, 0, -5];
    await writeLog(
      tmp,
      'runs.jsonl',
      durations.map((duration_ms, i) => record({ run_id: `r-${i}`, duration_ms })),
    );
    const [m] = (await summarize(tmp)).models;
    expect(m!.spawned).toBe(12); // 0 and -5 did not spawn
    expect(m!.duration_histogram).toEqual([2, 2, 0, 2, 1, 0, 0, 0, 2, 0, 0, 1, 2]);
    expect(m!.duration_histogram.reduce((a, b) => a + b, 0)).toBe(m!.spawned);
  });

  it('lists escalated tasks, most recent first, following them after the escalation', async () => {
    const s = await summarize(BASIC_DIR);
    expect(s.escalated_tasks).toEqual([
      {
        task_id: 't-beta',
        model: 'qwen3:8b',
        attempts: 5, // 4 failures, then an ok after the escalation
        escalations: 1,
        last_status: 'ok',
        last_error: 'no answer within 120000 ms; killed',
        escalation_reason: 'max_retries_exceeded',
        last_ts: '2025-11-22T10:12:00.000Z',
      },
      {
        task_id: 't-delta',
        model: 'llama3.2:latest',
        attempts: 1,
        escalations: 1,
        last_status: 'circuit_open',
        last_error: 'circuit open: 5 failures in a row; retry after 60 s',
        escalation_reason: 'circuit_open',
        last_ts: '2025-11-22T10:08:00.000Z',
      },
    ]);
  });

  it('builds a minute timeline over the 12 minutes, with escalation and circuit events', async () => {
    const { timeline } = await summarize(BASIC_DIR);
    expect(timeline.bucket).toBe('1m');
    expect(timeline.bucket_seconds).toBe(60);
    expect(timeline.buckets.map((b) => [b.start.slice(11, 16), b.runs, b.failures, b.escalations])).toEqual([
      ['10:00', 1, 0, 0],
      ['10:01', 1, 1, 0],
      ['10:02', 1, 1, 0],
      ['10:03', 1, 1, 0],
      ['10:04', 1, 1, 1],
      ['10:05', 1, 0, 0],
      ['10:06', 1, 0, 0],
      ['10:07', 1, 1, 1],
      ['10:08', 1, 1, 1],
      ['10:09', 1, 1, 0],
      ['10:10', 1, 0, 0],
      ['10:11', 1, 0, 0],
      ['10:12', 1, 0, 0],
    ]);
    expect(timeline.events).toEqual([
      {
        ts: '2025-11-22T10:04:00.000Z',
        kind: 'escalation',
        model: 'qwen3:8b',
        task_id: 't-beta',
        detail: 'max_retries_exceeded',
      },
      { ts: '2025-11-22T10:07:00.000Z', kind: 'escalation', model: 'llama3.2:latest', task_id: null, detail: 'circuit_open' },
      { ts: '2025-11-22T10:07:00.000Z', kind: 'circuit_opening', model: 'llama3.2:latest', task_id: null, detail: 'opened' },
      {
        ts: '2025-11-22T10:08:00.000Z',
        kind: 'escalation',
        model: 'llama3.2:latest',
        task_id: 't-delta',
        detail: 'circuit_open',
      },
    ]);
    expect(timeline.events_truncated).toBe(false);
  });
});

describe('filters', () => {
  it('since: only runs at or after it; runs without a ts are left out', async () => {
    const s = await summarize(BASIC_DIR, { since: new Date('2025-11-22T10:05:00Z') });
    expect(s.filters.since).toBe('2025-11-22T10:05:00.000Z');
    expect(s.total_runs).toBe(8);
    expect(s.range.first_ts).toBe('2025-11-22T10:05:00.000Z');
    expect(model(s, 'qwen3:8b')).toMatchObject({ runs: 3, ok: 3, escalations: 0 });
    // t-beta escalated before the window: in it, only its later ok attempt
    expect(s.escalated_tasks.map((t) => t.task_id)).toEqual(['t-delta']);
    expect(s.skipped_lines).toBe(2); // lines are counted whatever the filters
  });

  it('model: any spelling of the same model, or the exact logged name', async () => {
    for (const name of ['llama3.2', 'llama3.2:latest', 'library/llama3.2:latest', 'LLAMA3.2']) {
      const s = await summarize(BASIC_DIR, { model: name });
      expect(s.total_runs).toBe(4);
      expect(s.models.map((m) => m.model)).toEqual(['llama3.2:latest']);
    }
    expect((await summarize(BASIC_DIR, { model: 'bad model!' })).total_runs).toBe(1);
    expect((await summarize(BASIC_DIR, { model: 'qwen3' })).total_runs).toBe(0); // qwen3:latest is another model
  });

  it('task: exact task_id', async () => {
    const s = await summarize(BASIC_DIR, { task: 't-beta' });
    expect(s.total_runs).toBe(5);
    expect(s.models).toHaveLength(1);
    expect(model(s, 'qwen3:8b')).toMatchObject({ runs: 5, ok: 1, failures: { timeout: 3, crashed: 1 } });
    expect(s.escalated_tasks.map((t) => [t.task_id, t.attempts])).toEqual([['t-beta', 5]]);
  });

  it('status: one or several', async () => {
    const timeouts = await summarize(BASIC_DIR, { status: 'timeout' });
    expect(timeouts.total_runs).toBe(3);
    expect(timeouts.filters.status).toEqual(['timeout']);
    const some = await summarize(BASIC_DIR, { status: ['ok', 'crashed'] });
    expect(some.total_runs).toBe(8);
    expect(some.models.map((m) => [m.model, m.runs])).toEqual([
      ['qwen3:8b', 6],
      ['llama3.2:latest', 2],
    ]);
  });

  it('all together', async () => {
    const s = await summarize(BASIC_DIR, {
      since: new Date('2025-11-22T10:02:00Z'),
      model: 'qwen3:8b',
      task: 't-beta',
      status: 'timeout',
    });
    expect(s.total_runs).toBe(2);
  });
});

describe('rotated logs (test/fixtures/runs/rotated)', () => {
  it('reads runs.jsonl, then the dated files in order, and nothing else', async () => {
    const s = await summarize(ROTATED_DIR);
    expect(s.files).toEqual([
      'runs.jsonl',
      'runs-2025-11-21-001.jsonl',
      'runs-2025-11-22-001.jsonl',
      'runs-2025-11-22-002.jsonl',
    ]);
    expect(s.total_runs).toBe(5);
    expect(s.skipped_lines).toBe(1); // runs.jsonl ends with a torn line
    expect(s.models.map((m) => m.model)).toEqual(['gemma3:4b']); // not decoy:1b from runs-old.jsonl
    expect(s.range).toEqual({ first_ts: '2025-11-21T22:00:00.000Z', last_ts: '2025-11-22T02:00:00.000Z' });
    expect(s.escalated_tasks).toEqual([
      {
        task_id: 'r-1',
        model: 'gemma3:4b',
        attempts: 5, // across all four files
        escalations: 1,
        last_status: 'crashed',
        last_error: 'E5',
        escalation_reason: 'max_retries_exceeded',
        last_ts: '2025-11-22T02:00:00.000Z',
      },
    ]);
    expect(s.timeline.bucket).toBe('5m'); // 4 hours: 240 minutes do not fit in 200 buckets
  });

  it('an empty or missing directory gives an empty summary', async () => {
    const s = await summarize(join(tmp, 'nothing-here'));
    expect(s).toMatchObject({
      files: [],
      total_runs: 0,
      models: [],
      escalated_tasks: [],
      range: { first_ts: null, last_ts: null },
    });
    expect(s.timeline.buckets).toEqual([]);
  });
});

describe('robustness and bounds', () => {
  it('treats mistyped fields as absent', async () => {
    await writeLog(tmp, 'runs.jsonl', [
      record({
        ts: 'yesterday',
        duration_ms: '1000',
        queue_ms: null,
        escalate: 'yes',
        circuit: 'open',
        task_id: 42,
        error: { no: 1 },
      }),
      record({
        ts: 12345,
        model: 'qwen3:8b',
        status: 'timeout',
        duration_ms: -5,
        retry_count: 'x',
        escalate: true,
        escalation_reason: 7,
        task_id: 't',
      }),
      record({ ts: '1969-12-31T23:59:59.000Z', model: 'old:1b', status: 'ok', task_id: null }),
      record({ ts: '-271821-04-20T00:00:00.000Z', model: 'old:1b', status: 'ok', task_id: null }),
      record({ model: '', status: 'ok' }),
      record({ model: 'qwen3:8b', status: null }),
    ]);
    const s = await summarize(tmp);
    expect(s.total_runs).toBe(4);
    expect(s.unrecognized_records).toBe(2);
    expect(s.range).toEqual({ first_ts: null, last_ts: null }); // no ts from 1970 to 9999: none in range or timeline
    expect(s.timeline.buckets).toEqual([]);
    expect(model(s, 'old:1b')).toMatchObject({ runs: 2, ok: 2 });
    expect(model(s, 'qwen3:8b')).toMatchObject({ runs: 2, ok: 1, spawned: 0, escalations: 1, circuit_openings: 0 });
    expect(s.escalated_tasks).toEqual([
      {
        task_id: 't',
        model: 'qwen3:8b',
        attempts: 1,
        escalations: 1,
        last_status: 'timeout',
        last_error: null,
        escalation_reason: null,
        last_ts: null,
      },
    ]);
  });

  it('keeps only the most recent escalated tasks past the cap, and says so', async () => {
    const lines = Array.from({ length: 10 }, (_, i) =>
      record({
        ts: `2025-11-22T10:${String(i).padStart(2, '0')}:00.000Z`,
        task_id: `t-${i}`,
        status: 'timeout',
        escalate: true,
        escalation_reason: 'max_retries_exceeded',
        retry_count: 3,
      }),
    );
    await writeLog(tmp, 'runs.jsonl', lines);
    const s = await summarize(tmp, {}, { maxEscalatedTasks: 3 });
    expect(s.escalated_tasks.map((t) => t.task_id)).toEqual(['t-9', 't-8', 't-7']);
    expect(s.escalated_tasks_truncated).toBe(true);
    expect(s.escalated_tasks[0]!.attempts).toBe(4); // retry_count 3 + 1: earlier attempts are not in this log
    expect((await summarize(tmp, {}, { maxEscalatedTasks: 10 })).escalated_tasks_truncated).toBe(false);
  });

  it('counts attempts of tasks it saw before they escalated, within the tracked-task bound', async () => {
    const lines = [
      ...Array.from({ length: 3 }, (_, i) =>
        record({ ts: `2025-11-22T10:0${i}:00.000Z`, task_id: 'slow', status: 'ok', retry_count: 0 }),
      ),
      record({
        ts: '2025-11-22T10:05:00.000Z',
        task_id: 'slow',
        status: 'timeout',
        escalate: true,
        escalation_reason: 'circuit_open',
      }),
    ];
    await writeLog(tmp, 'runs.jsonl', lines);
    expect((await summarize(tmp)).escalated_tasks[0]!.attempts).toBe(4);
  });

  it('forgets the attempts of a task not seen among the last maxTrackedTasks, not those of the most recent', async () => {
    const seen = (task: string, minute: number) =>
      record({ ts: `2025-11-22T10:0${minute}:00.000Z`, task_id: task, status: 'ok' });
    const escalated = (task: string, minute: number) =>
      record({ ts: `2025-11-22T10:${minute}:00.000Z`, task_id: task, status: 'timeout', escalate: true, retry_count: 0 });
    const lines = ['t1', 't2', 't3', 't4', 't5', 't6'].map((task, i) => seen(task, i));
    await writeLog(tmp, 'runs.jsonl', [...lines, escalated('t6', 10), escalated('t1', 11)]);
    const attempts = Object.fromEntries(
      (await summarize(tmp, {}, { maxTrackedTasks: 4 })).escalated_tasks.map((t) => [t.task_id, t.attempts]),
    );
    expect(attempts).toEqual({ t6: 2, t1: 1 });
  });

  it('collects models past the cap under "(other)"', async () => {
    await writeLog(
      tmp,
      'runs.jsonl',
      ['a:1', 'b:1', 'c:1', 'd:1', 'c:1'].map((m) => record({ model: m })),
    );
    const s = await summarize(tmp, {}, { maxModels: 2 });
    expect(s.models_truncated).toBe(true);
    expect(s.models.map((m) => [m.model, m.runs])).toEqual([
      ['(other)', 3],
      ['a:1', 1],
      ['b:1', 1],
    ]);
  });

  it('counts made-up statuses, but at most 64 kinds per model', async () => {
    await writeLog(
      tmp,
      'runs.jsonl',
      Array.from({ length: 100 }, (_, i) => record({ status: `weird_${String(i).padStart(3, '0')}` })),
    );
    const qwen = model(await summarize(tmp), 'qwen3:8b')!;
    expect(Object.keys(qwen.failures)).toHaveLength(65);
    expect(qwen.failures['(other)']).toBe(36);
    expect(Object.values(qwen.failures).reduce((a, b) => a + b, 0)).toBe(100);
  });

  it('keeps the most recent events past the cap', async () => {
    const lines = Array.from({ length: 50 }, (_, i) =>
      record({
        ts: new Date(Date.UTC(2025, 10, 22, 10, i)).toISOString(),
        task_id: `t-${i}`,
        status: 'crashed',
        escalate: true,
        escalation_reason: 'model_not_found',
      }),
    );
    await writeLog(tmp, 'runs.jsonl', lines.reverse()); // out of order on purpose
    const { timeline } = await summarize(tmp, {}, { maxEvents: 5 });
    expect(timeline.events.map((e) => e.task_id)).toEqual(['t-45', 't-46', 't-47', 't-48', 't-49']);
    expect(timeline.events_truncated).toBe(true);
  });

  it.each([
    [12 * 60_000, '1m', 13],
    [5 * 3_600_000, '5m', 61],
    [3 * 86_400_000, '1h', 73],
    [30 * 86_400_000, '6h', 121],
    [150 * 86_400_000, '1d', 151],
    [3 * 365 * 86_400_000, '7d', 158],
    [10 * 365 * 86_400_000, '28d', 131],
  ])('picks the timeline bucket from the range (%i ms -> %s)', async (spanMs, bucket, count) => {
    const start = Date.UTC(2025, 0, 1); // a Thursday, like the epoch: 7-day buckets line up with it
    const times = [start + spanMs, start, start + spanMs / 2, start + spanMs / 3]; // not in order
    await writeLog(
      tmp,
      'runs.jsonl',
      times.map((t) => record({ ts: new Date(t).toISOString() })),
    );
    const { timeline } = await summarize(tmp);
    expect(timeline.bucket).toBe(bucket);
    expect(timeline.buckets.length).toBe(count);
    expect(timeline.buckets.length).toBeLessThanOrEqual(200);
    expect(timeline.buckets.reduce((sum, b) => sum + b.runs, 0)).toBe(4);
    const size = timeline.bucket_seconds * 1000;
    expect(
      timeline.buckets.every(
        (b, i) =>
          Date.parse(b.start) % size === 0 &&
          (i === 0 || Date.parse(b.start) - Date.parse(timeline.buckets[i - 1]!.start) === size),
      ),
    ).toBe(true);
  });
});
