/**
 * A fixed-size, log-bucketed histogram of non-negative values (milliseconds here): constant memory
 * whatever the number of values, quantiles within 1% (src/report/README.md, "Memory and accuracy").
 * Bucket `i` holds the values in `(γ^(i-1), γ^i]` with `γ = (1 + α) / (1 - α)` and reports
 * `2γ^i / (γ + 1)`, within `α` of every value in it (the DDSketch construction). The minimum and
 * maximum are kept exactly; negative and non-finite values are ignored.
 */
export class LogHistogram {
  /** Relative accuracy of a bucket's representative value. */
  static readonly ALPHA = 0.004;
  /** Smallest value given its own bucket; smaller ones count as 0. */
  static readonly MIN_VALUE = 0.01;
  /** Largest value given its own bucket; larger ones share the top bucket. */
  static readonly MAX_VALUE = 1e9;

  static readonly #GAMMA = (1 + LogHistogram.ALPHA) / (1 - LogHistogram.ALPHA);
  static readonly #LOG_GAMMA = Math.log(LogHistogram.#GAMMA);
  /** Index of the bucket holding MIN_VALUE: bucket indexes are offset by it. */
  static readonly #OFFSET = Math.ceil(Math.log(LogHistogram.MIN_VALUE) / LogHistogram.#LOG_GAMMA);
  static readonly BUCKETS = Math.ceil(Math.log(LogHistogram.MAX_VALUE) / LogHistogram.#LOG_GAMMA) - LogHistogram.#OFFSET + 1;

  #counts: number[] | null = null;
  #zeros = 0;
  #count = 0;
  #min = Infinity;
  #max = -Infinity;
  /** Durations are usually whole milliseconds: then quantiles are too (exact below 125). */
  #integers = true;

  /** The exact largest value added, `null` when empty. */
  get max(): number | null {
    return this.#count === 0 ? null : this.#max;
  }

  add(value: number): void {
    if (!(value >= 0) || value === Infinity) return; // negative, NaN, Infinity
    this.#count += 1;
    if (value < this.#min) this.#min = value;
    if (value > this.#max) this.#max = value;
    if (this.#integers && !Number.isInteger(value)) this.#integers = false;
    if (value < LogHistogram.MIN_VALUE) {
      this.#zeros += 1;
      return;
    }
    const counts = (this.#counts ??= new Array<number>(LogHistogram.BUCKETS).fill(0));
    const index = Math.ceil(Math.log(value) / LogHistogram.#LOG_GAMMA) - LogHistogram.#OFFSET;
    counts[Math.min(Math.max(index, 0), counts.length - 1)]! += 1;
  }

  /**
   * The nearest-rank quantile: the value of rank `ceil(q * count)` (1-based) in sorted order,
   * within {@link LogHistogram.ALPHA}. `null` when empty.
   * @param q from 0 to 1 (0.5 for the median, 0.95 for p95)
   */
  quantile(q: number): number | null {
    if (this.#count === 0) return null;
    const rank = Math.min(this.#count, Math.max(1, Math.ceil(q * this.#count)));
    if (rank === this.#count) return this.#max; // kept exactly
    if (rank === 1) return this.#min;
    if (rank <= this.#zeros) return this.#min; // under MIN_VALUE: within 0.01 ms
    let seen = this.#zeros;
    const counts = this.#counts!;
    for (let i = 0; i < counts.length; i++) {
      seen += counts[i]!;
      if (seen >= rank) {
        const upper = Math.exp((i + LogHistogram.#OFFSET) * LogHistogram.#LOG_GAMMA);
        const estimate = Math.min(this.#max, Math.max(this.#min, (2 * upper) / (LogHistogram.#GAMMA + 1)));
        return this.#integers ? Math.round(estimate) : estimate;
      }
    }
    return this.#max; // not reached: the counts add up to count
  }
}

/**
 * Rounds a millisecond figure for the summary: whole milliseconds from 100 ms up, hundredths below
 * (at most 0.5% off for values of 1 ms and more).
 */
export function roundMs(value: number | null): number | null {
  if (value === null) return null;
  return value >= 100 ? Math.round(value) : Math.round(value * 100) / 100;
}

/**
 * Upper bounds (inclusive, milliseconds) of the fixed duration buckets of `models[].duration_histogram`:
 * `<= 100 ms`, `<= 250 ms`, ..., `<= 10 min`, and a last bucket for everything longer. Log-spaced
 * (roughly 1-2.5-5 per decade) so that a fast model and a slow one fit on one chart.
 */
export const DURATION_BUCKETS_MS: readonly number[] = [
  100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000,
];

/** Index into `duration_histogram` of a duration: the first bucket whose bound it does not pass, or the last (`> 10 min`). */
export function durationBucketIndex(ms: number): number {
  let index = 0;
  while (index < DURATION_BUCKETS_MS.length && ms > DURATION_BUCKETS_MS[index]!) index += 1;
  return index;
}
