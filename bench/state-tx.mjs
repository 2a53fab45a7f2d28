// The per-run state change the server makes (src/app/attempt-ledger.ts settle), built from the real
// policies in dist/: the task's ledger entry (recordAttempt) and the model's circuit (recordVerdict).
import { randomUUID } from 'node:crypto';
import { CLOSED } from '../dist/policy/breaker-state.js';
import { recordVerdict } from '../dist/policy/breaker.js';
import { recordAttempt, retryCountFor } from '../dist/policy/task-ledger.js';

export const MODELS = ['llama3.2:latest', 'qwen2.5-coder:7b', 'qwen3:8b', 'deepseek-r1:7b'];
// A threshold no benchmark reaches, so circuits stay closed and every transaction does the same work.
const SETTINGS = { threshold: 1_000_000, cooldownMs: 60_000 };

/** A realistic TaskLedgerEntry (src/policy/task-ledger.ts) for seeding. */
export function seedEntry(i, now) {
  const failures = i % 7 === 0 ? 1 + (i % 3) : 0;
  return {
    attempts: 1 + (i % 5) + failures,
    failures,
    totalFailures: failures + (i % 11 === 0 ? 2 : 0),
    lastStatus: failures > 0 ? (i % 2 ? 'crashed' : 'timeout') : 'ok',
    lastRunId: randomUUID(),
    lastModel: MODELS[i % MODELS.length].replace(':latest', ''),
    escalated: false,
    escalationReason: null,
    firstSeenAt: now - 86_400_000 + i,
    updatedAt: now - 3_600_000 + i,
  };
}

/** One run's outcome applied to the state, as #settle does (9 in 10 succeed). */
export function applyRun(state, taskId, runId) {
  const now = Date.now();
  const model = MODELS[Math.floor(Math.random() * MODELS.length)];
  const status = Math.random() < 0.9 ? 'ok' : 'crashed';
  const entry = state.tasks[taskId];
  const retryCount = retryCountFor(entry, undefined);
  const step = recordVerdict(state.breakers[model] ?? CLOSED, status === 'ok' ? 'success' : 'failure', now, runId, SETTINGS);
  state.breakers[model] = step.next;
  state.tasks[taskId] = recordAttempt(entry, { status, retryCount, runId, model, escalationReason: null, now });
  return retryCount;
}

let runNo = 0;

/** The transaction of one run on a random one of the `tasks` seeded tasks, as the server makes it. */
export function runOnRandomTask(store, tasks) {
  const taskId = randomTask(tasks);
  return store.transact([taskId], (state) => applyRun(state, taskId, `bench-${runNo++}`));
}

export const randomTask = (tasks) => `task-${Math.floor(Math.random() * tasks)}`;

/** Every model's circuit, closed. */
export function closeCircuits(state) {
  for (const model of MODELS) state.breakers[model] = CLOSED;
}
