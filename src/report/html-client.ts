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
    var marks = function (kind, lane) {
      return timeline.events
        .filter(function (e) { return e.kind === kind; })
        .map(function (e) { return { x: e.ts_ms, y: lane, event: e }; });
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
            type: 'scatter', label: 'escalation', data: marks('escalation', 0.95), yAxisID: 'events', order: 0,
            pointStyle: 'triangle', pointRadius: 8, pointHoverRadius: 10, backgroundColor: colors.escalation, borderColor: colors.escalation_border, borderWidth: 1.5,
          },
          {
            type: 'scatter', label: 'circuit opening', data: marks('circuit_opening', 0.85), yAxisID: 'events', order: 0,
            pointStyle: 'rectRot', pointRadius: 8, pointHoverRadius: 10, backgroundColor: colors.circuit_opening, borderColor: '#ffffff', borderWidth: 1.5,
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
                return raw && raw.event ? when(raw.event.ts_ms, 'full') + ' UTC' : bucketTitle(items[0].parsed.x);
              },
              label: function (item) {
                var e = item.raw && item.raw.event;
                if (!e) return item.dataset.label + ': ' + item.formattedValue;
                return item.dataset.label + ': ' + e.model + (e.task_id ? ', task ' + e.task_id : '') + (e.detail ? ' (' + e.detail + ')' : '');
              },
            },
          },
        },
      },
    }));
  }

  window.__reportReady = true;
})();
`;
