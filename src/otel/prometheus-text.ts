import type { Attributes } from '@opentelemetry/api';
import { DataPointType, type MetricData, type ResourceMetrics } from '@opentelemetry/sdk-metrics';

/**
 * The metrics as Prometheus' text exposition format (0.0.4), written from what the SDK collected:
 * names in Prometheus' conventions (dots as underscores, `_seconds` for a unit of seconds, `_total`
 * for a counter), cumulative buckets, escaped label values. Pure.
 */
export function prometheusText(collected: ResourceMetrics): string {
  const families = collected.scopeMetrics.flatMap((scope) => scope.metrics).map(family);
  return families.filter((text) => text !== '').join('');
}

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** `mcp.server.operation.duration` in seconds -> `mcp_server_operation_duration_seconds`; a counter ends in `_total`. */
export function prometheusName(metric: Pick<MetricData, 'descriptor' | 'dataPointType'> & { isMonotonic?: boolean }): string {
  const base = sanitize(metric.descriptor.name);
  const unit = UNIT_SUFFIX[metric.descriptor.unit];
  const withUnit = unit === undefined || base.endsWith(`_${unit}`) ? base : `${base}_${unit}`;
  return isCounter(metric) && !withUnit.endsWith('_total') ? `${withUnit}_total` : withUnit;
}

const UNIT_SUFFIX: Partial<Record<string, string>> = { s: 'seconds', ms: 'milliseconds', By: 'bytes', '1': 'ratio' };

function isCounter(metric: { dataPointType: DataPointType; isMonotonic?: boolean }): boolean {
  return metric.dataPointType === DataPointType.SUM && metric.isMonotonic === true;
}

function sanitize(name: string): string {
  const clean = name.replace(/[^a-zA-Z0-9_:]/g, '_');
  return /^[0-9]/.test(clean) ? `_${clean}` : clean;
}

function family(metric: MetricData): string {
  if (metric.dataPoints.length === 0) return '';
  const name = prometheusName(metric);
  const head = `# HELP ${name} ${escapeHelp(metric.descriptor.description)}\n`;
  switch (metric.dataPointType) {
    case DataPointType.HISTOGRAM: {
      const lines = metric.dataPoints.flatMap((point) => histogramLines(name, point.attributes, point.value));
      return `${head}# TYPE ${name} histogram\n${lines.join('')}`;
    }
    case DataPointType.SUM:
    case DataPointType.GAUGE: {
      const type = isCounter(metric) ? 'counter' : 'gauge';
      const lines = metric.dataPoints.map((point) => sample(name, point.attributes, point.value));
      return `${head}# TYPE ${name} ${type}\n${lines.join('')}`;
    }
    default:
      return ''; // exponential histograms are never made here
  }
}

interface HistogramValue {
  readonly buckets: { readonly boundaries: number[]; readonly counts: number[] };
  readonly sum?: number;
  readonly count: number;
}

function histogramLines(name: string, attributes: Attributes, value: HistogramValue): string[] {
  const lines: string[] = [];
  let cumulative = 0;
  value.buckets.boundaries.forEach((boundary, index) => {
    cumulative += value.buckets.counts[index] ?? 0;
    lines.push(sample(`${name}_bucket`, attributes, cumulative, ['le', number(boundary)]));
  });
  lines.push(sample(`${name}_bucket`, attributes, value.count, ['le', '+Inf']));
  lines.push(sample(`${name}_sum`, attributes, value.sum ?? 0));
  lines.push(sample(`${name}_count`, attributes, value.count));
  return lines;
}

function sample(name: string, attributes: Attributes, value: number, extra?: [string, string]): string {
  const pairs = Object.entries(attributes).flatMap(([key, v]) =>
    v === undefined || v === null ? [] : [`${sanitize(key)}="${escapeLabel(String(v))}"`],
  );
  if (extra !== undefined) pairs.push(`${extra[0]}="${extra[1]}"`);
  return `${name}${pairs.length > 0 ? `{${pairs.join(',')}}` : ''} ${number(value)}\n`;
}

function number(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

function escapeLabel(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}
