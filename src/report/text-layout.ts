import { terminalText } from '../ollama/terminal-text.js';
import { cutLine } from './format.js';

// The text report's page: sentences wrapped to the width, headings, and tables that fit it. Every
// text goes through `terminalText` here, so nothing from the log moves the cursor, recolours the
// terminal or reorders the line (bidi controls), whichever section it comes from.

export type Style = 'bold' | 'red' | 'yellow' | 'green' | 'dim';

/** A word longer than a line: cut short with `...`, or broken over lines, whole (a path). */
type LongWords = 'cut' | 'break';

export interface Cell {
  readonly text: string;
  readonly style?: Style | undefined;
}
type Row = readonly Cell[];

interface Column {
  readonly header: string;
  readonly right?: boolean;
  /** Free text (an error): takes what width is left, cut to fit. */
  readonly fill?: boolean;
}

/** Columns of figures, aligned right. */
export function right(...headers: string[]): Column[] {
  return headers.map((header) => ({ header, right: true }));
}

const ANSI: Record<Style, string> = { bold: '1', red: '31', yellow: '33', green: '32', dim: '2' };
/** The first column (model names, task ids) is cut to this share of the width. */
const KEY_SHARE = 0.4;

/** Lines of the text report, none longer than `width`; ANSI colours only when `color`. */
export class TextPage {
  readonly #lines: string[] = [];

  constructor(
    readonly width: number,
    readonly color: boolean,
  ) {}

  /** A sentence: wrapped at the width, continuation lines indented two more spaces. */
  say(text: string, style?: Style, longWords: LongWords = 'cut'): void {
    for (const line of wrap(terminalText(text), this.width, longWords)) this.#lines.push(this.#paint({ text: line, style }));
  }

  /** A blank line, then a bold heading. */
  heading(text: string): void {
    this.#lines.push('', this.#paint({ text: cutLine(terminalText(text), this.width), style: 'bold' }));
  }

  /** A blank line, then `text` as it is. */
  paragraph(text: string): void {
    this.#lines.push('', terminalText(text));
  }

  /** A table that fits the width (see {@link fitTable}). */
  table(columns: readonly Column[], rows: readonly Row[]): void {
    this.#lines.push(...this.fitTable(columns, rows));
  }

  /** Lines already laid out (by {@link fitTable}). */
  push(...lines: string[]): void {
    this.#lines.push(...lines);
  }

  /** The page, ending with a newline. */
  text(): string {
    return `${this.#lines.join('\n')}\n`;
  }

  #paint(cell: Cell): string {
    return this.color && cell.style !== undefined ? `\u001b[${ANSI[cell.style]}m${cell.text}\u001b[0m` : cell.text;
  }

  /**
   * A table no wider than the page: the first column (the key) is cut to 40% of the width when
   * longer; when the other columns do not fit beside it they go into several tables, each repeating
   * the key; a `fill` column (free text) takes what is left and is cut to it.
   */
  fitTable(rawColumns: readonly Column[], rawRows: readonly Row[]): string[] {
    const keyMax = Math.max(12, Math.floor(this.width * KEY_SHARE));
    const columns = rawColumns.map((column) => ({ ...column, header: terminalText(column.header) }));
    const rows = rawRows.map((row) =>
      row.map((cell, c) => ({
        ...cell,
        text: c === 0 ? cutLine(terminalText(cell.text), keyMax) : terminalText(cell.text),
      })),
    );
    const natural = columns.map((column, c) => Math.max(column.header.length, ...rows.map((row) => row[c]?.text.length ?? 0)));
    const parts = columnGroups(columns, natural, this.width).map((group) => this.#part(columns, rows, [0, ...group], natural));
    return parts.flatMap((part, g) => (g > 0 ? ['', ...part] : part));
  }

  /** One part of a split table: the key column and the columns `shown`. */
  #part(columns: readonly Column[], rows: readonly Row[], shown: readonly number[], natural: readonly number[]): string[] {
    const widths = shown.map((c) => natural[c]!);
    const last = shown.length - 1;
    const fixed = widths.reduce((sum, w) => sum + w, 0) + 2 * last;
    if (fixed > this.width) widths[last] = Math.max(columns[shown[last]!]!.header.length, widths[last]! - (fixed - this.width));
    const render = (cells: Row): string =>
      shown
        .map((c, i) => {
          const text = cutLine(cells[c]?.text ?? '', widths[i]!);
          const padded = columns[c]!.right === true ? text.padStart(widths[i]!) : i === last ? text : text.padEnd(widths[i]!);
          return this.#paint({ text: padded, style: cells[c]?.style });
        })
        .join('  ');
    return [render(columns.map((column) => ({ text: column.header, style: 'bold' }))), ...rows.map(render)];
  }
}

/** The columns after the key, in groups that each fit beside it (a `fill` column counts 20 at most). */
function columnGroups(columns: readonly Column[], natural: readonly number[], width: number): number[][] {
  const groups: number[][] = [];
  let group: number[] = [];
  let used = natural[0]!;
  for (let c = 1; c < columns.length; c++) {
    const need = 2 + (columns[c]!.fill === true ? Math.min(natural[c]!, 20) : natural[c]!);
    if (group.length > 0 && used + need > width) {
      groups.push(group);
      group = [];
      used = natural[0]!;
    }
    group.push(c);
    used += need;
  }
  if (group.length > 0 || columns.length === 1) groups.push(group);
  return groups;
}

/**
 * Words of `text` in lines of at most `width` (a longer word is cut, or broken over lines);
 * continuation lines indented two more spaces.
 */
function wrap(text: string, width: number, longWords: LongWords): string[] {
  const indent = /^ */.exec(text)![0];
  const next = `${indent}  `;
  const room = width - next.length; // of a continuation line
  const out: string[] = [];
  let line = indent;
  for (const word of text.trim().split(/\s+/)) {
    if (line.trim() !== '' && line.length + 1 + word.length > width) {
      out.push(line);
      line = next;
    }
    const sep = line.trim() === '' ? '' : ' ';
    const fits = width - line.length - sep.length;
    if (longWords === 'cut' || word.length <= fits) {
      line += sep + cutLine(word, fits);
      continue;
    }
    // Broken: as much as fits here, the rest on continuation lines of their own.
    line += sep + word.slice(0, fits);
    for (let at = fits; at < word.length; at += room) {
      out.push(line);
      line = next + word.slice(at, at + room);
    }
  }
  out.push(line);
  return out;
}
