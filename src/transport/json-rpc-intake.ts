/**
 * What to do with one incoming line: hand it to the MCP server, or answer it with a JSON-RPC error
 * ourselves. The SDK drops what it cannot parse without a reply (the client then waits for its
 * timeout); here every such message that could be a request gets an error it can act on at once.
 * Pure: no I/O.
 */
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describeByteLimit } from './message-limits.js';

const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;

type RequestId = string | number;

export interface JsonRpcErrorReply {
  readonly jsonrpc: '2.0';
  readonly id: RequestId | null;
  readonly error: { readonly code: number; readonly message: string };
}

export type Intake =
  | { readonly kind: 'message'; readonly message: JSONRPCMessage }
  /** Answer with `reply` (one error, or one per request of a batch); `problem` is for the log. */
  | { readonly kind: 'refuse'; readonly reply: JsonRpcErrorReply | JsonRpcErrorReply[]; readonly problem: string }
  /** A malformed response to one of our requests: nothing to answer, only to log. */
  | { readonly kind: 'ignore'; readonly problem: string };

function errorReply(id: RequestId | null, code: number, message: string): JsonRpcErrorReply {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

/** Read one line of JSON-RPC. */
export function interpretLine(text: string): Intake {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const problem = `Parse error: the message is not valid JSON (${(error as Error).message})`;
    return { kind: 'refuse', reply: errorReply(null, PARSE_ERROR, problem), problem };
  }
  if (Array.isArray(value)) return refuseBatch(value);
  return interpretMessage(value);
}

/** Check one parsed JSON-RPC message (not a batch): over stdio a line, over HTTP a body. */
export function interpretMessage(value: unknown): Intake {
  // The message passed on is the parsed value itself, not the schema's copy: the copy drops an
  // own `__proto__` key, which the tool schemas must see to reject it as an unknown argument.
  const checked = JSONRPCMessageSchema.safeParse(value);
  if (checked.success) return { kind: 'message', message: value as JSONRPCMessage };
  const firstIssue = checked.error.issues[0];
  const fallback = firstIssue
    ? `${firstIssue.path.join('.') || 'message'}: ${firstIssue.message}`
    : 'not a valid JSON-RPC 2.0 message';
  if (looksLikeResponse(value)) return { kind: 'ignore', problem: `a malformed response: ${whatIsWrong(value, fallback)}` };
  const problem = `Invalid Request: ${whatIsWrong(value, fallback)}`;
  return { kind: 'refuse', reply: errorReply(readableId(value), INVALID_REQUEST, problem), problem };
}

/** A line over the limit, skipped unread: answered, with the request's id when its ends show it. */
export function refuseOversized(bytes: number, limit: number, head: string, tail: string): Intake {
  const problem = `Request too large: the message is ${bytes} bytes, over the limit of ${describeByteLimit(limit)}; it was not read. Send less per call (split a batch into several calls)`;
  return { kind: 'refuse', reply: errorReply(findTopLevelId(head, tail), INVALID_REQUEST, problem), problem };
}

function refuseBatch(batch: unknown[]): Intake {
  const problem =
    'Invalid Request: JSON-RPC batches are not supported (MCP removed them in 2025-06-18): send one message per line';
  const ids = batch.map(readableId).filter((id): id is RequestId => id !== null);
  const reply =
    ids.length === 0 ? errorReply(null, INVALID_REQUEST, problem) : ids.map((id) => errorReply(id, INVALID_REQUEST, problem));
  return { kind: 'refuse', reply, problem };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isRequestId(value: unknown): value is RequestId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value));
}

/** The id a reply can carry: the message's own when it is a valid id, else null. */
function readableId(value: unknown): RequestId | null {
  return isRecord(value) && isRequestId(value.id) ? value.id : null;
}

function looksLikeResponse(value: unknown): boolean {
  return isRecord(value) && !('method' in value) && ('result' in value || 'error' in value);
}

const REQUEST_MEMBERS = new Set(['jsonrpc', 'id', 'method', 'params']);

/** The first thing that keeps this from being a JSON-RPC 2.0 request or notification. */
function whatIsWrong(value: unknown, fallback: string): string {
  if (!isRecord(value)) return `a message must be a JSON object, got ${value === null ? 'null' : typeof value}`;
  if (value.jsonrpc !== '2.0') return '"jsonrpc" must be "2.0"';
  if ('id' in value && !isRequestId(value.id)) return '"id" must be a string or an integer';
  if (typeof value.method !== 'string' && !looksLikeResponse(value)) return '"method" must be a string';
  if ('params' in value && !isRecord(value.params)) return '"params" must be an object';
  const extra = Object.keys(value).filter((key) => !REQUEST_MEMBERS.has(key) && key !== 'result' && key !== 'error');
  if (extra.length > 0)
    return `unexpected member${extra.length > 1 ? 's' : ''} ${extra.map((k) => JSON.stringify(k)).join(', ')}`;
  return fallback;
}

/**
 * The top-level `id` of a message known only by its ends. Clients write it first
 * (`{"jsonrpc":"2.0","id":7,...`) or, like the SDK's, last (`...,"jsonrpc":"2.0","id":7}`).
 * The start is read token by token so a nested `"id"`, or one inside a string, is never taken for it.
 */
export function findTopLevelId(head: string, tail: string): RequestId | null {
  return idFromHead(head) ?? parseId(/[,{]\s*"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*\}\s*$/.exec(tail)?.[1]);
}

/** One JSON token: white space, a string, a punctuation mark, or a run of anything else (numbers, literals). */
const TOKEN = /\s+|"(?:[^"\\]|\\.)*"|[{}[\]:,]|[^\s"{}[\]:,]+/y;
const ID_VALUE = /^\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*[,}]/;

function idFromHead(head: string): RequestId | null {
  let depth = 0;
  let expectKey = false;
  TOKEN.lastIndex = 0;
  for (let match = TOKEN.exec(head); match !== null; match = TOKEN.exec(head)) {
    const token = match[0];
    if (token === '{' || token === '[') {
      depth += 1;
      expectKey = token === '{';
    } else if (token === '}' || token === ']') depth -= 1;
    // After a comma in an array this is wrong, but only the keys at depth 1 (the message object) matter.
    else if (token === ',') expectKey = true;
    else if (token === ':') expectKey = false;
    else if (token.startsWith('"')) {
      const text = parseJson(token);
      if (text === undefined) return null; // not JSON after all: nothing to trust
      if (expectKey && depth === 1 && text === 'id') return parseId(ID_VALUE.exec(head.slice(TOKEN.lastIndex))?.[1]);
      expectKey = false;
    }
  }
  return null; // the head ends inside a string, or holds no top-level id
}

/** A request id written as JSON, or null. */
function parseId(json: string | undefined): RequestId | null {
  const id = json === undefined ? undefined : parseJson(json);
  return isRequestId(id) ? id : null;
}

function parseJson(json: string): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return undefined;
  }
}
