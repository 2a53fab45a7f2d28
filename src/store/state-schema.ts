import * as z from 'zod';
import type { BreakerState } from '../policy/breaker-state.js';
import type { TaskLedgerEntry } from '../policy/task-ledger.js';
import { ESCALATION_REASONS, RUN_STATUSES } from '../policy/run-status.js';

/** The state the policies work on: task ledgers and model circuits (a view over several files). */
export interface StateData {
  tasks: Record<string, TaskLedgerEntry>;
  breakers: Record<string, BreakerState>;
  /** When old task entries were last pruned (epoch ms). */
  prunedAt: number;
}

/**
 * A map keyed by user input (task ids, model names) with no prototype: `constructor`, `toString`
 * or `__proto__` are then ordinary keys, not Object.prototype's members.
 */
export function dict<T>(entries?: Iterable<readonly [string, T]>): Record<string, T> {
  const map = Object.create(null) as Record<string, T>;
  if (entries) for (const [key, value] of entries) map[key] = value;
  return map;
}

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
});

const breakerSchema = z.discriminatedUnion('state', [
  z.object({ state: z.literal('closed'), consecutiveFailures: count }),
  z.object({ state: z.literal('open'), consecutiveFailures: count, openedAt: time, retryAt: time }),
  z.object({
    state: z.literal('half_open'),
    consecutiveFailures: count,
    probe: z.object({ runId: z.string(), leaseUntil: time }).nullable(),
  }),
]);

/** `state.json`: the circuits and bookkeeping. */
const mainFileSchema = z.object({
  version: z.literal(1),
  breakers: z.record(z.string(), z.unknown()),
  prunedAt: time.default(0),
});

/** One shard of the task ledger: `state.tasks/NN.json`. */
const shardFileSchema = z.object({
  tasks: z.record(z.string(), z.unknown()),
});

export interface Parsed<T> {
  readonly data: T;
  /** Entries that did not validate and were dropped (each named), so a warning can say so. */
  readonly dropped: readonly string[];
}

export type MainFile = Pick<StateData, 'breakers' | 'prunedAt'>;
export type ShardFile = Pick<StateData, 'tasks'>;

/**
 * Validate `state.json`. A malformed circuit is dropped on its own (one bad entry does not cost
 * every other model its circuit); a malformed document throws.
 */
export function parseMainFile(json: unknown): Parsed<MainFile> {
  const file = mainFileSchema.parse(json);
  const dropped: string[] = [];
  const breakers = dict<StateData['breakers'][string]>();
  // The entries of the JSON itself: zod's record output is a plain object, where a `__proto__` key would vanish.
  for (const [model, entry] of Object.entries((json as { breakers: object }).breakers)) {
    const parsed = breakerSchema.safeParse(entry);
    if (parsed.success) breakers[model] = parsed.data;
    else dropped.push(`circuit ${JSON.stringify(model)}`);
  }
  return { data: { breakers, prunedAt: file.prunedAt }, dropped };
}

/**
 * Validate one ledger shard; malformed task entries are dropped on their own, and so are the
 * tasks `owns` rejects (a hand-edited shard holding a task that belongs in another one, where no
 * lookup would find it and no transaction could write it back).
 */
export function parseShardFile(json: unknown, owns?: (taskId: string) => boolean): Parsed<ShardFile> {
  shardFileSchema.parse(json);
  const dropped: string[] = [];
  const tasks = dict<StateData['tasks'][string]>();
  for (const [taskId, entry] of Object.entries((json as { tasks: object }).tasks)) {
    const parsed = taskEntrySchema.safeParse(entry);
    if (!parsed.success) dropped.push(`task ${JSON.stringify(taskId)}`);
    else if (owns && !owns(taskId)) dropped.push(`task ${JSON.stringify(taskId)} (it belongs in another shard)`);
    else tasks[taskId] = parsed.data;
  }
  return { data: { tasks }, dropped };
}

export function serializeMainFile(main: MainFile): string {
  return JSON.stringify({ version: 1, breakers: main.breakers, prunedAt: main.prunedAt });
}

export function serializeShardFile(shard: ShardFile): string {
  return JSON.stringify({ tasks: shard.tasks });
}
