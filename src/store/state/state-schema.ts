import * as z from 'zod';
import type { BreakerState } from '../../policy/breaker-state.js';
import { dict, type StateData } from '../state-backend.js';
import { RECENT_RUNS, type TaskLedgerEntry } from '../../policy/task-ledger.js';
import { ESCALATION_REASONS, RUN_STATUSES } from '../../policy/run-status.js';

const count = z.number().int().nonnegative();
const time = z.number().nonnegative();

const taskEntrySchema = z.object({
  attempts: count,
  failures: count,
  totalFailures: count,
  lastStatus: z.enum(RUN_STATUSES),
  lastRunId: z.string(),
  lastModel: z.string(),
  escalated: z.boolean(),
  escalationReason: z.enum(ESCALATION_REASONS).nullable(),
  firstSeenAt: time,
  updatedAt: time,
  // Entries written before attempts were remembered by id hold none.
  recent: z
    .array(z.object({ runId: z.string(), status: z.enum(RUN_STATUSES), retryCount: count }))
    .max(RECENT_RUNS)
    .default([]),
});

const breakerSchema = z.discriminatedUnion('state', [
  z.object({ state: z.literal('closed'), consecutiveFailures: count }),
  z.object({ state: z.literal('open'), consecutiveFailures: count, openedAt: time, retryAt: time }),
  z.object({
    state: z.literal('half_open'),
    consecutiveFailures: count,
    probe: z.object({ runId: z.string(), leasedAt: time.optional(), leaseUntil: time }).nullable(),
  }),
]);

export type MainFile = Pick<StateData, 'breakers' | 'prunedAt' | 'prunedAsOf'>;
export type ShardFile = Pick<StateData, 'tasks'>;

/** A validated document, and what had to be repaired to get it (each named, so a warning can say so). */
export interface Parsed<T> {
  readonly data: T;
  /** Entries that did not validate and were dropped. */
  readonly dropped: readonly string[];
  /** Top-level fields of the wrong type, set back to their default. */
  readonly reset: readonly string[];
}

/** A document of which nothing can be kept: not an object, or a format this server does not know. */
class UnusableDocumentError extends Error {
  readonly kind = 'unusable_document';
}

export function isUnusableDocument(error: unknown): error is UnusableDocumentError {
  return (error as UnusableDocumentError | null)?.kind === 'unusable_document';
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A value as a warning quotes it: JSON (control characters escaped), at most 40 characters. */
function shortJson(value: unknown): string {
  const text = JSON.stringify(value) ?? 'missing';
  return text.length > 40 ? `${text.slice(0, 39)}…` : text;
}

/**
 * Validate `state.json`, keeping every valid part: a malformed circuit is dropped on its own (one
 * bad entry does not cost every other model its circuit), a top-level field of the wrong type is
 * set back to its default. Throws UnusableDocumentError for a document that is not an object or
 * of another version.
 */
export function parseMainFile(json: unknown): Parsed<MainFile> {
  if (!isRecord(json)) throw new UnusableDocumentError('not a JSON object');
  // Another version number is another format; a missing or mistyped one is only a damaged field.
  if (typeof json.version === 'number' && json.version !== 1) throw new UnusableDocumentError(`version ${json.version} is not 1`);
  const reset: string[] = json.version === 1 ? [] : [`version (was ${shortJson(json.version)})`];
  const timeOf = (field: 'prunedAt' | 'prunedAsOf'): number => {
    if (json[field] === undefined) return 0;
    if (time.safeParse(json[field]).success) return json[field] as number;
    reset.push(`${field} (was ${shortJson(json[field])})`);
    return 0;
  };
  const prunedAt = timeOf('prunedAt');
  const prunedAsOf = timeOf('prunedAsOf');
  if (!isRecord(json.breakers)) {
    reset.push(`breakers (was ${shortJson(json.breakers)}: every circuit starts closed)`);
    return { data: { breakers: dict(), prunedAt, prunedAsOf }, dropped: [], reset };
  }
  const dropped: string[] = [];
  const breakers = dict<BreakerState>();
  // The entries of the JSON itself (a `__proto__` key included), into a map without a prototype.
  for (const [model, entry] of Object.entries(json.breakers)) {
    const parsed = breakerSchema.safeParse(entry);
    if (parsed.success) breakers[model] = parsed.data;
    else dropped.push(`circuit ${JSON.stringify(model)}`);
  }
  return { data: { breakers, prunedAt, prunedAsOf }, dropped, reset };
}

/**
 * Validate one ledger shard; malformed task entries are dropped on their own, and so are the
 * tasks `owns` rejects (a hand-edited shard holding a task that belongs in another one, where no
 * lookup would find it and no transaction could write it back). Throws UnusableDocumentError when
 * the document is not `{"tasks": {...}}`.
 */
export function parseShardFile(json: unknown, owns?: (taskId: string) => boolean): Parsed<ShardFile> {
  if (!isRecord(json) || !isRecord(json.tasks)) throw new UnusableDocumentError('not {"tasks": {...}}');
  const dropped: string[] = [];
  const tasks = dict<TaskLedgerEntry>();
  for (const [taskId, entry] of Object.entries(json.tasks)) {
    const parsed = taskEntrySchema.safeParse(entry);
    if (!parsed.success) dropped.push(`task ${JSON.stringify(taskId)}`);
    else if (owns && !owns(taskId)) dropped.push(`task ${JSON.stringify(taskId)} (it belongs in another shard)`);
    else tasks[taskId] = parsed.data;
  }
  return { data: { tasks }, dropped, reset: [] };
}

/** `state.json` as written: the circuits and the pruning times, under a format version. */
export function mainFileJson(main: MainFile): object {
  return { version: 1, breakers: main.breakers, prunedAt: main.prunedAt, prunedAsOf: main.prunedAsOf };
}
