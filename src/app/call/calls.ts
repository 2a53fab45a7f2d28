import { randomUUID } from 'node:crypto';
import type { RunResult } from '../reply/run-result.js';
import { LiveCall } from './live-call.js';
import type { CallEvents } from '../attempt/events.js';

/** A call in flight: its id, its task, where it stands, and its result to come. */
export interface CallHandle {
  readonly id: string;
  readonly taskId: string | null;
  /** Where it stands, from its events. */
  readonly live: LiveCall;
  readonly result: Promise<RunResult>;
}

/** The calls in flight on this server, by id: a status read, a drain at shutdown and a live view find them here. */
export class Calls {
  readonly #calls = new Map<string, CallHandle>();

  /** Track the call `run` starts (given its id), from now until its result is logged and given back. */
  start(
    taskId: string | undefined,
    events: CallEvents,
    run: (id: string) => Promise<RunResult>,
    id: string = randomUUID(),
  ): CallHandle {
    const live = new LiveCall();
    events.listen(live.listen);
    const result = run(id);
    const handle: CallHandle = { id, taskId: taskId ?? null, live, result };
    this.#calls.set(id, handle);
    void result.finally(() => this.#calls.delete(id)).catch(() => {});
    return handle;
  }

  /** Calls started and not yet logged. */
  get size(): number {
    return this.#calls.size;
  }

  /** This server's calls of a task in flight. */
  ofTask(taskId: string): number {
    return [...this.#calls.values()].filter((call) => call.taskId === taskId).length;
  }

  /** Resolves when every call started so far has finished and been logged. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.#calls.values()].map((call) => call.result));
  }
}
