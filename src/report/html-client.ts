/**
 * The script of the HTML report (`report --html`), inlined after Chart.js. It reads the chart data
 * that `buildReportCharts` computed (`<script type="application/json" id="report-charts">`), draws
 * the charts on the canvases marked `data-chart="outcomes|latency|timeline"`, and publishes what it
 * drew as `window.__reportCharts` (`{ name: { series, points: [per series], labels, series_labels } }`)
 * and `window.__reportReady = true`, for tests and for anyone poking at the page.
 *
 * Plain ES2017 in a string: it runs in the browser, not in Node, and must stay free of `</script`
 * and of backticks (it is a template literal here).
 */
export const REPORT_CLIENT_SCRIPT = String.raw`(function () {
  'use strict';
  var drawn = {};
  window.__reportCharts = drawn;
  var source = document.getElementById('report-charts');
  var data = JSON.parse(source ? source.textContent : '{}');
  if (typeof Chart === 'undefined') throw new Error('report: Chart.js did not load');

  Chart.defaults.animation = false;
  Chart.defaults.responsive = true;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';
  Chart.defaults.font.size = 12;
  Chart.defaults.color = '#333';
  Chart.defaults.plugins.legend.labels.boxWidth = 14;
  Chart.defaults.plugins.title.font = { size: 14, weight: 'bold' };
  Chart.defaults.plugins.title.padding = { top: 4, bottom: 8 };

  function canvas(name) {
    return document.querySelector('canvas[data-chart="' + name + '"]');
  }
  function axisTitle(text) {
    return { display: true, text: text, font: { size: 12, weight: 'bold' } };
  }
  function cut(text, max) {
    return text.length > max ? text.slice(0, max - 1) + '\u2026' : text;
  }
  function pad(n) {
    return (n < 10 ? '0' : '') + n;
  }
  /** 'HH:MM', 'MM-DD HH:MM' or 'YYYY-MM-DD' in UTC, as the data says. */
  function when(ms, style) {
    var d = new Date(ms);
    var date = d.getUTCFullYear() + '-' + pad(d.getUTCMonth() + 1) + '-' + pad(d.getUTCDate());
    var hm = pad(d.getUTCHours()) + ':' + pad(d.getUTCMinutes());
    if (style === 'time') return hm;
    if (style === 'day-time') return date.slice(5) + ' ' + hm;
    if (style === 'full') return date + ' ' + hm + ':' + pad(d.getUTCSeconds());
    return date;
  }
  function record(name, chart) {
    drawn[name] = {
      series: chart.data.datasets.length,
      points: chart.data.datasets.map(function (d) { return d.data.length; }),
      labels: chart.data.labels ? chart.data.labels.slice() : null,
      series_labels: chart.data.datasets.map(function (d) { return d.label; }),
    };
  }

  var outcomes = data.outcomes;
  if (outcomes && canvas('outcomes')) {
    record('outcomes', new Chart(canvas('outcomes'), {
      type: 'bar',
      data: {
        labels: outcomes.labels.map(function (label) { return cut(label, 36); }),
        datasets: outcomes.series.map(function (s) {
          return { label: s.label, data: s.data, backgroundColor: s.color, borderColor: '#ffffff', borderWidth: 1, stack: 'runs', maxBarThickness: 28 };
        }),
      },
      options: {
        indexAxis: 'y',
        scales: {
          x: { stacked: true, beginAtZero: true, ticks: { precision: 0 }, title: axisTitle('runs (count)') },
          y: { stacked: true, title: axisTitle('model') },
        },
        plugins: {
          title: { display: true, text: 'Outcome of every run, per model' },
          legend: { position: 'top' },
          tooltip: {
            callbacks: {
              title: function (items) { return items.length ? outcomes.labels[items[0].dataIndex] : ''; },
            },
          },
        },
      },
    }));
  }

  var latency = data.latency;
  if (latency && canvas('latency')) {
    record('latency', new Chart(canvas('latency'), {
      type: 'bar',
      data: {
        labels: latency.labels,
        datasets: latency.series.map(function (s) {
          return { label: cut(s.label, 36), data: s.data, backgroundColor: s.color, borderColor: s.color, borderWidth: 1, maxBarThickness: 24 };
        }),
      },
      options: {
        scales: {
          x: { title: axisTitle('duration of the run, spawn to exit (bucket: up to this long)'), ticks: { maxRotation: 0, autoSkip: false } },
          y: { beginAtZero: true, grace: '8%', ticks: { precision: 0 }, title: axisTitle('spawned runs (count)') },
        },
        plugins: {
          title: { display: true, text: 'How long runs took, per model' },
          legend: { position: 'top' },
          tooltip: {
            callbacks: {
              title: function (items) { return items.length ? 'duration ' + latency.ranges[items[0].dataIndex] : ''; },
              label: function (item) { return latency.series[item.datasetIndex].label + ': ' + item.formattedValue + ' run(s)'; },
            },
          },
        },
      },
    }));
  }

  var timeline = data.timeline;
  if (timeline && canvas('timeline')) {
    var half = timeline.bucket_ms / 2;
    var bars = function (values) {
      return values.map(function (v, i) { return { x: timeline.starts_ms[i] + half, y: v }; });
    };
    // Every marker on one row (lane), one per slot of the timeline: they cannot overlap.
    var marks = function (kind) {
      return timeline.markers
        .filter(function (m) { return m.kind === kind; })
        .map(function (m) { return { x: m.x_ms, y: 0.93, marker: m }; });
    };
    var bucketTitle = function (x) {
      var start = x - half;
      return when(start, 'full').slice(0, 16) + ' to ' + when(start + timeline.bucket_ms, timeline.tick_style === 'date' ? 'date' : 'time') + ' UTC';
    };
    var colors = timeline.colors;
    record('timeline', new Chart(canvas('timeline'), {
      data: {
        datasets: [
          { type: 'bar', label: 'ok runs', data: bars(timeline.ok), backgroundColor: colors.ok, stack: 'runs', pointStyle: 'rect', order: 2 },
          { type: 'bar', label: 'failed runs (any status but ok)', data: bars(timeline.failed), backgroundColor: colors.failed, stack: 'runs', pointStyle: 'rect', order: 2 },
          {
            type: 'scatter', label: 'escalations', data: marks('escalation'), yAxisID: 'events', order: 0,
            pointStyle: 'triangle', pointRadius: 7, pointHoverRadius: 9, backgroundColor: colors.escalation, borderColor: colors.escalation_border, borderWidth: 1.5,
          },
          {
            type: 'scatter', label: 'circuit opening (and escalations)', data: marks('circuit_opening'), yAxisID: 'events', order: 0,
            pointStyle: 'rectRot', pointRadius: 7, pointHoverRadius: 9, backgroundColor: colors.circuit_opening, borderColor: '#ffffff', borderWidth: 1.5,
          },
        ],
      },
      options: {
        scales: {
          x: {
            type: 'linear',
            offset: false,
            grid: { offset: false },
            min: timeline.min_ms,
            max: timeline.max_ms,
            // Ticks at whole UTC steps, computed by the report (Chart.js's own spacing drifts on millisecond values).
            afterBuildTicks: function (scale) {
              scale.ticks = timeline.ticks_ms.map(function (value) { return { value: value }; });
            },
            ticks: {
              maxRotation: 0,
              autoSkipPadding: 12,
              callback: function (value) { return when(value, timeline.tick_style); },
            },
            title: axisTitle(timeline.axis_title),
          },
          y: { stacked: true, beginAtZero: true, grace: '30%', ticks: { precision: 0 }, title: axisTitle(timeline.y_title) },
          events: { display: false, min: 0, max: 1 },
        },
        plugins: {
          title: { display: true, text: 'Runs and failures over time, with escalations and circuit openings' },
          legend: {
            position: 'top',
            labels: { usePointStyle: true, pointStyleWidth: 16, sort: function (a, b) { return a.datasetIndex - b.datasetIndex; } },
          },
          tooltip: {
            callbacks: {
              title: function (items) {
                if (!items.length) return '';
                var raw = items[0].raw;
                if (raw && raw.marker) {
                  var start = raw.marker.x_ms - timeline.marker_slot_ms / 2;
                  return when(start, 'full').slice(0, 16) + ' to ' + when(start + timeline.marker_slot_ms, 'time') + ' UTC: ' +
                    raw.marker.escalations + ' escalation(s), ' + raw.marker.circuit_openings + ' circuit opening(s)';
                }
                return bucketTitle(items[0].parsed.x);
              },
              label: function (item) {
                var m = item.raw && item.raw.marker;
                if (!m) return item.dataset.label + ': ' + item.formattedValue;
                return m.lines;
              },
            },
          },
        },
      },
    }));
  }

  if (drawn.timeline) {
    var timelineChart = Chart.getChart(canvas('timeline'));
    drawn.timeline.marker_px = [2, 3].reduce(function (all, i) {
      return all.concat(timelineChart.getDatasetMeta(i).data.map(function (p) { return { x: p.x, y: p.y }; }));
    }, []);
  }

  var tokens = data.tokens;
  function modelBars(name, title, values, axis, format) {
    if (!canvas(name)) return;
    record(name, new Chart(canvas(name), {
      type: 'bar',
      data: {
        labels: tokens.labels.map(function (label) { return cut(label, 28); }),
        datasets: [{ label: axis, data: values, backgroundColor: tokens.colors, borderColor: tokens.colors, borderWidth: 1, maxBarThickness: 36 }],
      },
      options: {
        indexAxis: 'y',
        scales: {
          x: { beginAtZero: true, grace: '5%', title: axisTitle(axis) },
          y: { title: axisTitle('model') },
        },
        plugins: {
          title: { display: true, text: title },
          legend: { display: false },
          tooltip: {
            callbacks: {
              title: function (items) { return items.length ? tokens.labels[items[0].dataIndex] : ''; },
              label: function (item) { return format(item.raw, item.dataIndex); },
            },
          },
        },
      },
    }));
  }
  if (tokens) {
    modelBars('tokens', 'Output speed per model (median)', tokens.output_tps_p50, 'output tokens per second (median)', function (v) {
      return v === null ? 'no figure' : v + ' tokens/s';
    });
    modelBars('prompt_tokens', 'Prompt size per model (95th percentile)', tokens.prompt_tokens_p95, 'prompt tokens (95th percentile)', function (v, i) {
      return (v === null ? 'no figure' : v + ' tokens') + '; ' + tokens.cold_loads[i] + ' cold load(s), ' + tokens.may_be_truncated[i] + ' maybe truncated';
    });
  }

  window.__reportReady = true;
})();
`;
