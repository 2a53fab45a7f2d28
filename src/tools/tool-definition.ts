import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ServerNotification, ServerRequest, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type * as z from 'zod';
import type { ControlEvent } from '../telemetry/run-record.js';

export type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** What a tool handler returns: the structured result (always), its text rendering, and whether it failed. */
export interface ToolOutcome<Out> {
  readonly structured: Out;
  readonly text: string;
  readonly isError: boolean;
  /** Fields of the result beside `structuredContent` and `content` (MCP allows them): programs read them, models do not. */
  readonly fields?: Readonly<Record<string, unknown>>;
}

/**
 * One MCP tool. Unlike `McpServer.registerTool`, invalid arguments reach the tool's own
 * `onInvalidInput`, so a rejected call still gets the tool's structured result (and, for
 * `ollama_run`, its runs.jsonl line) instead of a bare error string.
 */
export interface ToolDefinition<In extends z.ZodType, Out extends z.ZodType> {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly inputSchema: In;
  /** What `tools/list` shows of the arguments, when it is a looser form of `inputSchema` (which is what is checked). */
  readonly listedInputSchema?: z.ZodType;
  readonly outputSchema: Out;
  readonly annotations: ToolAnnotations;
  handle(input: z.output<In>, extra: ToolExtra): Promise<ToolOutcome<z.output<Out>>>;
  /**
   * Start the work as job `jobId` at once (an MCP task: `tools/call` with `task`), detached from the
   * request; `ended` is what `handle` would have answered once it ends. Absent: the tool does not run as a task.
   */
  startJob?(
    input: z.output<In>,
    extra: ToolExtra,
    jobId: string,
  ): Promise<{ readonly ended: Promise<ToolOutcome<z.output<Out>>> }>;
  onInvalidInput(problem: string, rawArguments: unknown, extra: ToolExtra): Promise<ToolOutcome<z.output<Out>>>;
}

/** Writes a control action (a reset, a status look-up) as a line of runs.jsonl. */
export type ControlLogger = (event: ControlEvent) => Promise<void>;

// Each tool has its own schema types; a list of tools can only name them as `any`.
export type AnyToolDefinition = ToolDefinition<any, any>;
