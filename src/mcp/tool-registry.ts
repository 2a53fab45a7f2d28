import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { CreateTaskResult } from '@modelcontextprotocol/sdk/experimental/tasks/types.js';
import * as z from 'zod';
import { findExcessiveNesting, MAX_ARGUMENT_DEPTH } from '../tools/shared-fields.js';
import type { AnyToolDefinition, ToolExtra, ToolOutcome } from '../tools/tool-definition.js';
import { valueAt } from '../config/zod-english.js';
import type { Observer } from '../otel/observer.js';

/** Serve `tools/list` and `tools/call` for these tools on a low-level SDK Server; `observer`: each call's span and duration. */
export function registerTools(server: Server, tools: readonly AnyToolDefinition[], observer: Observer | null = null): void {
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  // Built at the first `tools/list`: the `initialize` reply, which a client waits on first, needs no JSON schema.
  let listing: ReturnType<typeof listTools> | null = null;
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: (listing ??= listTools(tools)) }));
  // The SDK has already checked the request against CallToolRequestSchema; parsing it again with
  // that schema would copy `arguments` and drop an own `__proto__` key, which must instead be
  // refused like any other unknown argument. So `arguments` is taken as it came.
  const handle = async (request: CallToolRequest, extra: ToolExtra): Promise<CallToolResult | CreateTaskResult> => {
    const tool = byName.get(request.params.name);
    if (!tool) {
      return {
        isError: true,
        content: [
          { type: 'text', text: `Unknown tool \`${request.params.name}\`. Available tools: ${[...byName.keys()].join(', ')}.` },
        ],
      };
    }
    const rawArguments = request.params.arguments ?? {};
    if (request.params.task !== undefined) return startTask(tool, rawArguments, request.params.task, extra);
    try {
      const parsed = parseArguments(tool, rawArguments);
      const outcome = parsed.ok
        ? await tool.handle(parsed.data, extra)
        : await tool.onInvalidInput(parsed.problem, rawArguments, extra);
      return toCallToolResult(outcome);
    } catch (error) {
      // A bug, not an outcome: say so plainly rather than crash the server.
      return { isError: true, content: [{ type: 'text', text: `Internal error in ${tool.name}: ${(error as Error).message}` }] };
    }
  };
  server.setRequestHandler(CallToolRequestAsSent, (request, extra) => {
    if (observer === null) return handle(request, extra);
    const info = {
      tool: request.params.name,
      requestId: extra.requestId,
      meta: extra._meta,
      protocolVersion: protocolVersionOf(server, extra),
    };
    return observer.toolCall(info, (meta) => handle(request, { ...extra, _meta: meta }));
  });
}

/** The MCP version the client speaks: its HTTP header, else what it asked for at `initialize` (stdio). */
function protocolVersionOf(server: Server, extra: ToolExtra): string | undefined {
  const header = extra.requestInfo?.headers['mcp-protocol-version'];
  if (typeof header === 'string') return header;
  const transport = server.transport as { readonly protocolVersion?: unknown } | undefined;
  return typeof transport?.protocolVersion === 'string' ? transport.protocolVersion : undefined;
}

function listTools(tools: readonly AnyToolDefinition[]) {
  return tools.map((tool) => ({
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: jsonSchemaOf(tool.listedInputSchema ?? tool.inputSchema, 'input'),
    outputSchema: jsonSchemaOf(tool.outputSchema, 'output'),
    annotations: tool.annotations,
    // A tool that can run as an MCP task may also be called plainly.
    ...(tool.startJob ? { execution: { taskSupport: 'optional' as const } } : {}),
  }));
}

export function toCallToolResult(outcome: ToolOutcome<unknown>): CallToolResult {
  return {
    ...outcome.fields,
    isError: outcome.isError,
    structuredContent: outcome.structured as Record<string, unknown>,
    content: [{ type: 'text', text: outcome.text }],
  };
}

/**
 * `tools/call` with `task` (MCP Tasks): the work starts as a job of the task's id and the reply is
 * the task at once; its result is stored when it ends (`tasks/result`). Arguments that are invalid
 * are refused as an error of the request (and logged as the call would log them).
 */
async function startTask(
  tool: AnyToolDefinition,
  rawArguments: unknown,
  task: { ttl?: number },
  extra: ToolExtra,
): Promise<CreateTaskResult> {
  const taskStore = extra.taskStore;
  if (!tool.startJob || !taskStore)
    throw new McpError(ErrorCode.InvalidParams, `${tool.name} does not run as a task: call it without task`);
  const parsed = parseArguments(tool, rawArguments);
  if (!parsed.ok) {
    await tool.onInvalidInput(parsed.problem, rawArguments, extra);
    throw new McpError(ErrorCode.InvalidParams, parsed.problem);
  }
  const created = await taskStore.createTask({ ttl: task.ttl ?? null });
  let ended: Promise<ToolOutcome<unknown>>;
  try {
    ({ ended } = await tool.startJob(parsed.data, extra, created.taskId));
  } catch (error) {
    // A bug, not an outcome: the task fails with it rather than stay "working" until it expires.
    const text = `Internal error in ${tool.name}: ${(error as Error).message}`;
    await taskStore.storeTaskResult(created.taskId, 'failed', { isError: true, content: [{ type: 'text', text }] });
    return { task: created };
  }
  void ended
    .then((outcome) =>
      taskStore.storeTaskResult(created.taskId, outcome.isError ? 'failed' : 'completed', toCallToolResult(outcome)),
    )
    .catch(() => {}); // the job's record keeps its result either way
  return { task: created };
}

/** `tools/call` with `arguments` left as the client sent it (the SDK validated it as an object already). */
type CallToolRequest = z.infer<typeof CallToolRequestAsSent>;
const CallToolRequestAsSent = z.object({
  method: z.literal('tools/call'),
  params: z.looseObject({
    name: z.string(),
    arguments: z.custom<Record<string, unknown>>().optional(),
    task: z.looseObject({ ttl: z.number().optional() }).optional(),
  }),
});

/** The arguments as the tool's schema reads them, or what is wrong with them. */
function parseArguments(
  tool: AnyToolDefinition,
  rawArguments: unknown,
): { ok: true; data: unknown } | { ok: false; problem: string } {
  const tooDeep = findExcessiveNesting(rawArguments, MAX_ARGUMENT_DEPTH);
  const parsed = tooDeep === null ? tool.inputSchema.safeParse(rawArguments) : null;
  if (parsed?.success) return { ok: true, data: parsed.data };
  return { ok: false, problem: parsed ? describeIssues(parsed.error, rawArguments) : describeTooDeep(tooDeep ?? []) };
}

function describeTooDeep(path: readonly (string | number)[]): string {
  const name = path.length > 0 ? `\`${path[0]}\`` : 'arguments';
  return `Invalid arguments: ${name}: nested deeper than ${MAX_ARGUMENT_DEPTH} levels of objects and arrays.`;
}

type JsonSchemaObject = { type: 'object'; [key: string]: unknown };

/**
 * The listed form of a tool's JSON schema. Input schemas keep a description on the tool's own
 * arguments only (a job of `ollama_run_many` is described by `ollama_run`'s); output schemas keep
 * none: no model reads them, and the docs describe every field.
 */
function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): JsonSchemaObject {
  const { $schema: _ignored, ...json } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  return strip(json, false, io === 'input') as JsonSchemaObject;
}

/**
 * Bounds the server checks itself (and explains when it refuses a call), left out of the listed
 * schemas: the agent pays for every byte of `tools/list` in every session.
 */
const CHECKED_BY_THE_SERVER = new Set([
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minItems',
  'maxItems',
  'propertyNames',
]);

/**
 * `node` without the server's bounds, and without descriptions: but its own when `describe`, and its
 * properties' own when `describeProperties`.
 */
function strip(node: unknown, describe: boolean, describeProperties = false): unknown {
  if (Array.isArray(node)) return node.map((item) => strip(item, false));
  if (!isObject(node)) return node;
  const lean: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (CHECKED_BY_THE_SERVER.has(key)) continue;
    if (key === 'description' && typeof value === 'string' && !describe) continue;
    // `additionalProperties: {}` allows anything, as leaving it out does.
    if (key === 'additionalProperties' && isObject(value) && Object.keys(value).length === 0) continue;
    // `properties` maps field names (not keywords) to schemas.
    lean[key] =
      key === 'properties' && isObject(value)
        ? Object.fromEntries(Object.entries(value).map(([name, v]) => [name, strip(v, describeProperties)]))
        : strip(value, false);
  }
  return singleTypes(lean);
}

/**
 * `type: [X, "null"]` (zod's nullable) as `anyOf: [{type: X}, {type: "null"}]`: a client that reads `type`
 * as one string (Gemini's OpenAPI subset) rejects the array form, and the Inspector's `type-union` check
 * warns of it. The other keywords stay beside `anyOf`: each applies to its own type only.
 */
function singleTypes(node: Record<string, unknown>): Record<string, unknown> {
  const { type, ...rest } = node;
  if (!Array.isArray(type)) return node;
  if (type.length === 1) return { type: type[0], ...rest };
  const branches = type.map((one) => ({ type: one }));
  if (!('anyOf' in rest)) return { anyOf: branches, ...rest };
  return { ...rest, allOf: [...(Array.isArray(rest.allOf) ? rest.allOf : []), { anyOf: branches }] };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** One line per problem, each naming the argument, what is allowed and what was given. */
export function describeIssues(error: z.ZodError, rawArguments: unknown): string {
  const args = typeof rawArguments === 'object' && rawArguments !== null ? (rawArguments as Record<string, unknown>) : {};
  const lines = error.issues.map((issue) => {
    if (issue.code === 'unrecognized_keys') {
      // Inside a batch job the path says which job: `jobs.2.system`.
      const prefix = issue.path.map((part) => `${String(part)}.`).join('');
      return `unknown argument${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((key) => `\`${prefix}${key}\``).join(', ')}`;
    }
    const name = issue.path.map(String).join('.') || 'arguments';
    const given = valueAt(args, issue.path);
    if (issue.code === 'invalid_type' && issue.path.length > 0 && given === undefined) return `\`${name}\` is required`;
    const got =
      issue.path.length > 0 && given !== undefined && !issue.message.includes(', got ') ? `, got ${preview(given)}` : '';
    return `\`${name}\`: ${issue.message}${got}`;
  });
  return `Invalid arguments: ${lines.join('; ')}.`;
}

function preview(value: unknown): string {
  if (findExcessiveNesting(value, MAX_ARGUMENT_DEPTH) !== null) return 'a value nested too deep to show';
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
