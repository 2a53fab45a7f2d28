import { randomUUID } from 'node:crypto';
import type { CreateTaskOptions, TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type { CallToolResult, Request, RequestId, Result, Task } from '@modelcontextprotocol/sdk/types.js';
import { JOB_KEEP_MS, type JobView } from '../app/call/jobs.js';
import type { RunService } from '../app/run-service.js';
import type { JobRecord, JobTask } from '../store/job-files.js';

/** How often a client is told to ask how a task stands. */
const POLL_INTERVAL_MS = 2_000;

/**
 * MCP Tasks (spec 2025-11-25, the SDK's experimental runtime) kept as jobs: a `tools/call` with a
 * `task` runs as a job of this id, so `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel`
 * see the same runs as ollama_wait, from any server on the data dir, by the same owner (a task is
 * bound to its owner, not to the session: a reconnected client collects it). A task's result stays
 * for its TTL, at most an hour after it ended.
 */
export class JobTaskStore implements TaskStore {
  readonly #runs: () => Promise<RunService>;
  readonly #owner: string;
  /** A stored tool result from a job's record, or the tool's result rebuilt from the job's own. */
  readonly #resultOf: (view: JobView) => CallToolResult;

  constructor(runs: () => Promise<RunService>, owner: string, resultOf: (view: JobView) => CallToolResult) {
    this.#runs = runs;
    this.#owner = owner;
    this.#resultOf = resultOf;
  }

  async createTask(options: CreateTaskOptions, _requestId: RequestId, request: Request): Promise<Task> {
    const runs = await this.#runs();
    const id = randomUUID();
    const ttlMs = Math.min(options.ttl ?? JOB_KEEP_MS, JOB_KEEP_MS);
    const task: JobTask = { ttlMs, pollIntervalMs: POLL_INTERVAL_MS, toolResult: null, status: null };
    const kind = (request.params as { name?: unknown } | undefined)?.name === 'ollama_run_many' ? 'batch' : 'run';
    await runs.jobs.reserve(id, kind, this.#owner, task);
    return toTask((await runs.jobs.get(id, this.#owner))!);
  }

  async getTask(taskId: string): Promise<Task | null> {
    const view = await this.#view(taskId);
    return view === null ? null : toTask(view);
  }

  async storeTaskResult(taskId: string, status: 'completed' | 'failed', result: Result): Promise<void> {
    const runs = await this.#runs();
    const view = await runs.jobs.get(taskId, this.#owner);
    if (view?.record.task == null) return;
    const kept = view.record.task.status === 'cancelled' ? 'cancelled' : status;
    await runs.jobs.storeTask(taskId, { ...view.record.task, status: kept, toolResult: result });
  }

  async getTaskResult(taskId: string): Promise<Result> {
    const view = await this.#view(taskId);
    if (view === null) throw new Error(`no task ${taskId}`);
    return (view.record.task?.toolResult as Result | null) ?? this.#resultOf(view);
  }

  async updateTaskStatus(taskId: string, status: Task['status']): Promise<void> {
    if (status !== 'cancelled') return; // the job's own end sets every other status
    const runs = await this.#runs();
    const view = await runs.jobs.get(taskId, this.#owner);
    if (view?.record.task == null) return;
    await runs.jobs.storeTask(taskId, { ...view.record.task, status: 'cancelled' });
    await runs.jobs.cancel(taskId, this.#owner);
  }

  async listTasks(): Promise<{ tasks: Task[] }> {
    const runs = await this.#runs();
    const records = await runs.jobs.tasks(this.#owner);
    const views = await Promise.all(records.map((record) => runs.jobs.get(record.id, this.#owner)));
    return { tasks: views.filter((view): view is JobView => view !== null).map(toTask) };
  }

  async #view(taskId: string): Promise<JobView | null> {
    const view = await (await this.#runs()).jobs.get(taskId, this.#owner);
    return view?.record.task == null ? null : view;
  }
}

/** A job as a task: working while it runs; completed or failed as the tool's result said; cancelled when asked. */
function toTask(view: JobView): Task {
  const { record } = view;
  const task = record.task!;
  const status: Task['status'] =
    task.status ?? (view.state === 'running' ? 'working' : view.state === 'lost' ? 'failed' : statusOfDone(record));
  return {
    taskId: record.id,
    status,
    ttl: task.ttlMs,
    createdAt: new Date(record.createdAt).toISOString(),
    lastUpdatedAt: new Date(record.finishedAt ?? record.createdAt).toISOString(),
    pollInterval: task.pollIntervalMs,
    ...(view.state === 'lost' ? { statusMessage: 'the server running it stopped before it ended' } : {}),
  };
}

/** A job that ended before the task runtime stored its result (its server died): as its result says. */
function statusOfDone(record: JobRecord): Task['status'] {
  const result = record.result as { metadata?: { ok?: boolean }; summary?: { failed?: number } } | null;
  if (result?.metadata !== undefined) return result.metadata.ok ? 'completed' : 'failed';
  return (result?.summary?.failed ?? 0) > 0 ? 'failed' : 'completed';
}
