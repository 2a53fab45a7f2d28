/** A control action worth a line in runs.jsonl (a reset, a status look-up). */
export interface ControlEvent {
  readonly tool: 'ollama_reset' | 'ollama_task_status';
  readonly task_id: string | null;
  readonly model: string | null;
  readonly action: 'status' | 'reset_task' | 'reset_circuit';
  readonly detail: string;
}

export type ControlLogger = (event: ControlEvent) => Promise<void>;
