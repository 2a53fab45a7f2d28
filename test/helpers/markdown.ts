// Reading the project's markdown pages: a page, one of its sections, its headings' anchors and its links.
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '../..');

/** A page of the repository, by its path from the root (`README.md`, `docs/configuration.md`). */
export function readDoc(page: string): string {
  return readFileSync(path.join(ROOT, page), 'utf8');
}

/**
 * One section of `page`: from the line that starts with `from` (a heading, or the bold words that
 * open a paragraph) up to the line that starts with `to`, or, without `to`, up to the next heading
 * of the same or a higher level (or the end). Lines in code blocks are never taken for either.
 * Throws when a line is missing, so a renamed heading fails the test that reads the section
 * instead of leaving it an empty section that checks nothing.
 */
export function sectionOf(page: string, from: string, to?: string): string {
  return sectionIn(readDoc(page), from, to, page);
}

/** {@link sectionOf} on a text; `name` names it in the error. */
export function sectionIn(markdown: string, from: string, to?: string, name = 'the page'): string {
  const lines = proseLines(markdown);
  const start = lines.findIndex(({ line }) => line.startsWith(from));
  if (start === -1) throw new Error(`${name} has no line starting with "${from}"`);
  const level = headingLevel(from);
  const ends = (line: string) =>
    to !== undefined ? line.startsWith(to) : level !== null && (headingLevel(line) ?? Infinity) <= level;
  const end = lines.findIndex(({ line }, index) => index > start && ends(line));
  if (end === -1 && to !== undefined) throw new Error(`${name} has no line starting with "${to}" after "${from}"`);
  const all = markdown.split('\n');
  return all.slice(lines[start]!.number - 1, end === -1 ? undefined : lines[end]!.number - 1).join('\n');
}

function headingLevel(line: string): number | null {
  return /^(#{1,6}) /.exec(line)?.[1]!.length ?? null;
}

/** The lines of a page outside fenced code blocks, with their line numbers (from 1). */
function proseLines(markdown: string): { line: string; number: number }[] {
  const lines: { line: string; number: number }[] = [];
  let fence: string | null = null;
  markdown.split('\n').forEach((line, index) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker !== undefined && (fence === null || marker.startsWith(fence))) fence = fence === null ? marker : null;
    else if (fence === null) lines.push({ line, number: index + 1 });
  });
  return lines;
}

/** A heading's anchor as GitHub makes it: the text lower-cased, punctuation dropped, each space a `-`. */
export function githubAnchor(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replaceAll(' ', '-');
}

/** Every anchor a page's headings make; a repeated heading gets `-1`, `-2`, ... as on GitHub. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  for (const { line } of proseLines(markdown)) {
    const text = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (text === undefined) continue;
    const base = githubAnchor(text);
    let anchor = base;
    for (let n = 1; anchors.has(anchor); n++) anchor = `${base}-${n}`;
    anchors.add(anchor);
  }
  return anchors;
}

export interface Link {
  readonly line: number;
  /** The file part, relative to the page's folder (`''` for a link within the page). */
  readonly file: string;
  /** The anchor without its `#`, or null. */
  readonly anchor: string | null;
}

/** The page's links to files of the repository (`[text](target)`, outside code); web links are left out. */
export function relativeLinksOf(markdown: string): Link[] {
  const links: Link[] = [];
  for (const { line, number } of proseLines(markdown)) {
    const prose = line.replace(/(`+)[\s\S]*?\1/g, '');
    for (const match of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = match[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      const hash = target.indexOf('#');
      links.push({
        line: number,
        file: decodeURIComponent(hash === -1 ? target : target.slice(0, hash)),
        anchor: hash === -1 ? null : target.slice(hash + 1),
      });
    }
  }
  return links;
}
