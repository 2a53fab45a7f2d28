import * as z from 'zod';
import { collectHealth, healthReportSchema, type HealthDeps, type HealthReport } from '../health/collect-health.js';
import { renderHealth } from '../health/render-health.js';
import type { AnyToolDefinition, ToolOutcome } from '../mcp/tool-registry.js';

export const ollamaHealthInputSchema = z.strictObject({});

/** `ollama_health`: a read-only check of everything `ollama_run` needs. It never starts a model. */
export function ollamaHealthTool(deps: HealthDeps): AnyToolDefinition {
  return {
    name: 'ollama_health',
    title: 'Check Ollama and the models',
    description: [
      'Check, without running a model, whether Ollama and the models are usable: the ollama CLI and its version,',
      "whether the Ollama server answers, which models are installed, each model's circuit breaker",
      '(an open circuit refuses runs for retry_after_seconds), the run queue, and whether the telemetry dir is writable.',
      'Call it before delegating work, or when ollama_run keeps failing with ollama_unreachable, cli_not_found or model_not_found.',
      'The call itself succeeds (isError false) even when something is broken: read `ok`, and `problems`, where each problem says how to fix it.',
      'Takes no arguments; answers within about 10 s.',
    ].join(' '),
    inputSchema: ollamaHealthInputSchema,
    outputSchema: healthReportSchema,
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    async handle() {
      return present(await collectHealth(deps), false);
    },
    async onInvalidInput(problem) {
      const report = await collectHealth(deps);
      const callProblem = `this call was invalid and its arguments were ignored (ollama_health takes no arguments): ${problem}`;
      return present({ ...report, problems: [callProblem, ...report.problems] }, true);
    },
  };
}

function present(report: HealthReport, isError: boolean): ToolOutcome<HealthReport> {
  return { structured: report, text: renderHealth(report), isError };
}
