import type { AttemptInfo } from '../app/attempt/types.js';
import type { RunResult } from '../app/reply/run-result.js';
import { terminalText } from '../ollama/terminal-text.js';
import type { ToolCallInfo } from './observer.js';

// What the spans and metrics say, in the MCP and GenAI semantic conventions and this server's own
// `ollama_runner.*` names: pure functions of an attempt, its result and a tool call.

export type Attributes = Record<string, string | number | boolean>;

/** `gen_ai.operation.name` of an attempt: `ollama run` talks to Ollama's chat endpoint. */
export const OPERATION = 'chat';
export const PROVIDER = 'ollama';
/** Longest attribute string kept; the rest is cut (an error's tail can be long). */
const MAX_TEXT = 1_000;

/** A string fit for an attribute: control and bidi characters shown as escapes, cut at MAX_TEXT. */
export function safeText(text: string): string {
  const visible = terminalText(text);
  return visible.length > MAX_TEXT ? `${visible.slice(0, MAX_TEXT - 3)}...` : visible;
}

/** Where the CLI finds Ollama (OLLAMA_HOST as Ollama reads it): `server.address` and `server.port`. */
export function ollamaServer(host: string | undefined): { address: string; port: number } {
  const text = host?.trim() || '127.0.0.1:11434';
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text)?.[1]?.toLowerCase();
  const rest = scheme === undefined ? text : text.slice(scheme.length + 3);
  const hostPort = rest.split('/')[0]!;
  const match = /^(\[[^\]]+\]|[^:]*)(?::(\d+))?$/.exec(hostPort);
  const address = (match?.[1] || '127.0.0.1').replace(/^\[|\]$/g, '');
  const port = match?.[2] !== undefined ? Number(match[2]) : scheme === 'https' ? 443 : scheme === 'http' ? 80 : 11434;
  return { address: safeText(address), port };
}

/** The name of an attempt's CLIENT span: `{gen_ai.operation.name} {gen_ai.request.model}`. */
export function attemptSpanName(info: Pick<AttemptInfo, 'model'>): string {
  return `${OPERATION} ${safeText(info.model)}`;
}

/** What an attempt's span says from its start: model, provider, host, and where it stands in its call. */
export function attemptAttributes(info: AttemptInfo, server: { address: string; port: number }): Attributes {
  const attributes: Attributes = {
    'gen_ai.operation.name': OPERATION,
    'gen_ai.provider.name': PROVIDER,
    'gen_ai.request.model': safeText(info.model),
    'server.address': server.address,
    'server.port': server.port,
    'ollama_runner.run_id': info.runId,
    'ollama_runner.busy_try': info.busyTry,
    'ollama_runner.max_retries': info.maxRetries,
  };
  if (info.taskId !== null) attributes['ollama_runner.task_id'] = safeText(info.taskId);
  if (info.callId !== null) attributes['ollama_runner.call_id'] = info.callId;
  if (info.chainId !== null) attributes['ollama_runner.chain_id'] = info.chainId;
  if (info.chainStep !== null) attributes['ollama_runner.chain_step'] = info.chainStep;
  if (info.batchId !== null) attributes['ollama_runner.batch_id'] = info.batchId;
  return attributes;
}

/**
 * What an attempt's span says once it ended: status (`error.type` when not ok), tokens, and whether
 * the call escalated with it. `content`: the prompt and answer, only when the user opted in.
 */
export function endedAttributes(result: RunResult, willRetry: boolean, content: { prompt: string } | null): Attributes {
  const { metadata } = result;
  const attributes: Attributes = {
    'gen_ai.response.model': safeText(metadata.model),
    'ollama_runner.status': metadata.status,
    'ollama_runner.will_retry': willRetry,
    'ollama_runner.escalate': metadata.escalate,
    'ollama_runner.retry_count': metadata.retry_count,
    'ollama_runner.cold_load': metadata.cold_load,
    'ollama_runner.queue_ms': metadata.queue_ms,
    'ollama_runner.circuit.state': metadata.circuit.state,
  };
  if (!metadata.ok) attributes['error.type'] = metadata.status;
  if (metadata.escalation_reason !== null) attributes['ollama_runner.escalation_reason'] = metadata.escalation_reason;
  if (metadata.retries_left !== null) attributes['ollama_runner.retries_left'] = metadata.retries_left;
  if (metadata.usage.prompt_tokens !== null) attributes['gen_ai.usage.input_tokens'] = metadata.usage.prompt_tokens;
  if (metadata.usage.output_tokens !== null) attributes['gen_ai.usage.output_tokens'] = metadata.usage.output_tokens;
  if (content !== null) {
    attributes['gen_ai.input.messages'] = messages('user', content.prompt);
    attributes['gen_ai.output.messages'] = messages('assistant', result.output);
  }
  return attributes;
}

/** The GenAI conventions' message list, as JSON (which escapes every control character). */
function messages(role: 'user' | 'assistant', text: string): string {
  return JSON.stringify([{ role, parts: [{ type: 'text', content: text }] }]);
}

/** The SERVER span of a `tools/call`: its name and what it says before it runs. */
export function toolCallSpan(info: ToolCallInfo, transport: 'pipe' | 'tcp'): { name: string; attributes: Attributes } {
  const tool = safeText(info.tool);
  const attributes: Attributes = {
    'mcp.method.name': 'tools/call',
    'gen_ai.tool.name': tool,
    'gen_ai.operation.name': 'execute_tool',
    'jsonrpc.request.id': safeText(String(info.requestId)),
    'network.transport': transport,
  };
  if (info.protocolVersion !== undefined) attributes['mcp.protocol.version'] = safeText(info.protocolVersion);
  return { name: `tools/call ${tool}`, attributes };
}

/** What the SERVER span says once the tool answered: `error.type` = `tool_error` when isError, the escalation. */
export function toolCallEndAttributes(answer: unknown): Attributes {
  const escalation = escalationOf(answer);
  const attributes: Attributes = { 'ollama_runner.escalate': escalation !== null };
  if (isRecord(answer) && answer.isError === true) attributes['error.type'] = 'tool_error';
  if (escalation !== null) attributes['ollama_runner.escalation_reason'] = safeText(escalation);
  return attributes;
}

/**
 * The escalation a tool's answer carries: `metadata.escalation_reason` of `ollama_run`'s (and
 * `ollama_wait`'s), the first escalated job's of a batch; null when none escalated.
 */
export function escalationOf(answer: unknown): string | null {
  const metadata = isRecord(answer) && isRecord(answer.metadata) ? answer.metadata : null;
  if (metadata === null || metadata.escalate !== true) return null;
  if (typeof metadata.escalation_reason === 'string') return metadata.escalation_reason;
  const jobs = Array.isArray(metadata.jobs) ? metadata.jobs : [];
  const job = jobs.find((one) => isRecord(one) && one.escalate === true && typeof one.escalation_reason === 'string');
  return isRecord(job) ? String(job.escalation_reason) : 'unknown';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
