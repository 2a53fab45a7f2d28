import type { ControlEvent } from '../telemetry/run-record.js';

export type { ControlEvent };

/** Writes a control action (a reset, a status look-up) as a line of runs.jsonl. */
export type ControlLogger = (event: ControlEvent) => Promise<void>;
