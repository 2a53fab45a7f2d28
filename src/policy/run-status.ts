/**
 * Every way an `ollama_run` attempt can end. One list, shared by the runner's classifier,
 * the policy table, the tool's output schema and the runs.jsonl record.
 */
export const RUN_STATUSES = [
  /** The model answered: exit 0 with non-empty output. */
  'ok',
  /** The answer passed its `timeout_ms` (counted from its first byte) and the run was killed (SIGTERM, then SIGKILL). */
  'timeout',
  /**
   * No answer began within `start_timeout_ms` (or before the call's deadline): the CLI was still
   * waiting in Ollama's queue, for the model to load, or for the prompt to be read. It was stopped.
   */
  'start_timeout',
  /** The model is not installed and could not be pulled (`pull model manifest: file does not exist`). */
  'model_not_found',
  /**
   * The CLI could not reach the Ollama server: `could not connect to ollama`, `connection refused`, or a
   * remote `OLLAMA_HOST` that fails (`Head "http://host:11434/": dial tcp ...: no route to host`, `no such host`, ...).
   */
  'ollama_unreachable',
  /** The Ollama server refused the request because its queue is full (`503 Service Unavailable: server busy`). */
  'server_busy',
  /**
   * The model had to be pulled and the registry could not be reached
   * (`pull model manifest: Get "https://registry.ollama.ai/v2/...": <network error>`). Temporary.
   */
  'pull_failed',
  /** A cloud model needs `ollama signin`; the CLI printed that (and only that) on stdout and exited 0. */
  'signin_required',
  /**
   * The ollama.com account may not run this cloud model (`403 Forbidden: this model requires a subscription`),
   * or cloud models are switched off on this server (`403 Forbidden: ollama cloud is disabled`).
   */
  'cloud_access_denied',
  /** The cloud usage limit was reached (`429 Too Many Requests: you've reached your hourly usage limit`). */
  'rate_limited',
  /**
   * The prompt does not fit the model's context window and the model refuses it (`400 Bad Request: the prompt is
   * longer than the context length ...`, MLX: `... exceeds the model's maximum context length ...`).
   */
  'prompt_too_long',
  /**
   * The model cannot produce text: it does not support generation (`does not support generate`), it generates
   * images, or it is an embedding model (it answered with a JSON vector).
   */
  'model_unsupported',
  /**
   * The prompt names an image or audio file a multimodal model had to read, and the CLI could not
   * (`invalid file type: ...`, `open ...: permission denied`, `read ...: is a directory`).
   */
  'input_file_error',
  /** The CLI exited 0 but the answer was empty or only whitespace. */
  'empty_output',
  /** The model printed more than the output cap; it was stopped and the output truncated. */
  'output_limit',
  /** The CLI exited non-zero (or died by a signal we did not send) for another reason. */
  'crashed',
  /** `OLLAMA_BIN` could not be executed at all (not found, not executable). */
  'cli_not_found',
  /**
   * The server's machine could not start the CLI just now: this server's open files (EMFILE), the
   * system's (ENFILE), its processes (EAGAIN: a ulimit, a container's pids limit) or its memory
   * (ENOMEM) were exhausted. Nothing ran; it passes by itself.
   */
  'spawn_failed',
  /** Rejected without spawning: the model's circuit is open (or the call's time ran out waiting for the half-open probe). */
  'circuit_open',
  /** The CLI refused the call's options (e.g. `--think` on a model that cannot think). */
  'unsupported_option',
  /** The caller cancelled, or the server shut down, while the run was queued or running. */
  'cancelled',
  /**
   * The server running it died (SIGKILL, out of memory) before the attempt ended: the next server
   * settles it from the record left behind, so the attempt is neither lost nor counted twice.
   */
  'interrupted',
  /** Rejected without spawning: the task escalated before and OLLAMA_MCP_ESCALATION=block (reset it first). */
  'blocked',
  /** An `ollama_run_many` job that never started because the batch deadline passed first. */
  'not_started',
  /** Rejected without spawning: the arguments were invalid. */
  'invalid_input',
] as const;

export type RunStatus = (typeof RUN_STATUSES)[number];

/** Why a result tells the caller to stop retrying and hand the task upwards. */
export const ESCALATION_REASONS = [
  /** The task has failed `max_retries` times before this failed attempt. */
  'max_retries_exceeded',
  /** The model's circuit is open: it failed too often in a row, across all tasks. */
  'circuit_open',
  /** The model is not installed; no retry will fix that. */
  'model_not_found',
  /** The Ollama server is down or unreachable; no retry will fix that until someone starts it. */
  'ollama_unreachable',
  /** A cloud model needs a human to run `ollama signin`. */
  'signin_required',
  /** A cloud model needs a human: a subscription for this model, or cloud models enabled on the server. */
  'cloud_access_denied',
  /** The `ollama` CLI is missing or not executable on the server's machine. */
  'cli_not_found',
] as const;

export type EscalationReason = (typeof ESCALATION_REASONS)[number];
