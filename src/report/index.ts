// The `report` subcommand and the runs.jsonl summary behind it and the `ollama_runs_summary` tool.
export { runReportCommand, REPORT_USAGE, type ReportCommandDeps, type TextSink } from './command.js';
export { parseSince, parseStatusFilter, ReportUsageError, isReportUsageError, type RunFilters } from './filters.js';
export { LogHistogram, roundMs } from './histogram.js';
export { listRunLogFiles } from '../telemetry/log-files.js';
export { renderReportText, type RenderTextOptions, type SummaryView } from './render-text.js';
export { summarizeRuns, DEFAULT_SUMMARY_LIMITS, OTHER_MODELS, type SummarizeOptions, type SummaryLimits } from './summary.js';
export * from './summary-schema.js';
export { renderReportHtml, buildReportCharts, STATUS_COLORS, type RenderHtmlOptions, type ReportCharts } from './render-html.js';
export { loadChartLibrary } from './chart-library.js';
export { DURATION_BUCKETS_MS, durationBucketIndex } from './histogram.js';
