// Every link between the project's pages leads somewhere: a file that exists and, for `#anchor`
// links, a heading of that file with that anchor (GitHub's rules).
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchorsOf, githubAnchor, readDoc, relativeLinksOf, ROOT, sectionIn } from '../helpers/markdown.js';

/** README.md, docs/, and every other page beside the code (not the data dirs or the dependencies). */
function pages(): string[] {
  const found = ['README.md'];
  for (const dir of ['docs', 'src', 'bench', 'telemetry', 'test']) {
    for (const entry of readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })) {
      if (entry.endsWith('.md')) found.push(path.posix.join(dir, entry.split(path.sep).join('/')));
    }
  }
  return found.sort();
}

/** The broken links of one page, each as `page:line -> target (why)`. */
function brokenLinks(page: string): string[] {
  const broken: string[] = [];
  for (const link of relativeLinksOf(readDoc(page))) {
    const target = link.file === '' ? page : path.posix.normalize(path.posix.join(path.posix.dirname(page), link.file));
    const shown = `${page}:${link.line} -> ${link.file}${link.anchor === null ? '' : `#${link.anchor}`}`;
    if (target.startsWith('../') || !existsSync(path.join(ROOT, target))) broken.push(`${shown} (no such file)`);
    else if (link.anchor !== null) {
      if (!target.endsWith('.md') || statSync(path.join(ROOT, target)).isDirectory()) broken.push(`${shown} (not a page)`);
      else if (!anchorsOf(readDoc(target)).has(link.anchor)) broken.push(`${shown} (no such heading in ${target})`);
    }
  }
  return broken;
}

describe('links between the pages', () => {
  it('finds the map and the topic pages', () => {
    expect(pages()).toEqual(expect.arrayContaining(['README.md', 'docs/README.md', 'telemetry/README.md']));
  });

  it.each(pages())('%s: every relative link names a file that exists, and a heading of it', (page) => {
    expect(brokenLinks(page)).toEqual([]);
  });
});

describe('GitHub anchors', () => {
  it.each([
    ['The `ollama_run` tool', 'the-ollama_run-tool'],
    ['Team mode: one ledger and one set of circuits on Redis', 'team-mode-one-ledger-and-one-set-of-circuits-on-redis'],
    ['Long runs: progress and cancellation', 'long-runs-progress-and-cancellation'],
    ['HTTP & security (v2)', 'http--security-v2'],
    ['See [the tiers](configuration.md)', 'see-the-tiers'],
  ])('%s -> #%s', (heading, anchor) => {
    expect(githubAnchor(heading)).toBe(anchor);
  });

  it('numbers a repeated heading, and skips lines in code blocks', () => {
    expect([...anchorsOf('# Input\n\n## Input\n\n```sh\n# not a heading\n```\n### Input\n')]).toEqual([
      'input',
      'input-1',
      'input-2',
    ]);
  });

  it('reads links outside code only', () => {
    const links = relativeLinksOf('[a](docs/a.md#x) `[b](b.md)`\n```\n[c](c.md)\n```\n[d](https://example.com) [e](#here)\n');
    expect(links).toEqual([
      { line: 1, file: 'docs/a.md', anchor: 'x' },
      { line: 5, file: '', anchor: 'here' },
    ]);
  });
});

describe('a section of a page', () => {
  const page = '# T\n\n## A\n\ntext\n```sh\n# a comment, not a heading\n```\n### A.1\n\nmore\n## B\n\n**Time.** x\n';

  it('runs to the next heading of its level, past code blocks and deeper headings', () => {
    expect(sectionIn(page, '## A')).toBe('## A\n\ntext\n```sh\n# a comment, not a heading\n```\n### A.1\n\nmore');
    expect(sectionIn(page, '## B')).toBe('## B\n\n**Time.** x\n');
    expect(sectionIn(page, '## A', '### A.1')).toBe('## A\n\ntext\n```sh\n# a comment, not a heading\n```');
  });

  it('throws when a line it starts or ends at is missing', () => {
    expect(() => sectionIn(page, '## C')).toThrow('no line starting with "## C"');
    expect(() => sectionIn(page, '## A', '**Later.**')).toThrow('no line starting with "**Later.**" after "## A"');
  });
});
