import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// src/README.md's table "folder | holds | may import" is the contract: every import in src/ (static,
// dynamic or type-only) follows one of its arrows, and no folders import each other in a circle.

const ROOT = path.resolve(__dirname, '../..');
const SRC = path.join(ROOT, 'src');

/** The folders each folder may import, as src/README.md's table whose first column is `first` says. */
function readArrows(readme: string, first = 'folder'): Map<string, Set<string>> {
  const lines = readme.split('\n');
  const header = lines.findIndex((line) => new RegExp(`^\\|\\s*${first}\\s*\\|`).test(line) && line.includes('may import'));
  if (header === -1) throw new Error(`src/README.md has no table with the columns "${first}" and "may import"`);
  const column = cellsOf(lines[header]!).indexOf('may import');
  const arrows = new Map<string, Set<string>>();
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break;
    const cells = cellsOf(line);
    const folder = /`([^`]+)`/.exec(cells[0] ?? '')?.[1];
    if (folder === undefined) throw new Error(`a row of src/README.md's table names no folder: ${line}`);
    arrows.set(folder, new Set([...(cells[column] ?? '').matchAll(/`([^`]+)`/g)].map((match) => match[1]!)));
  }
  return arrows;
}

function cellsOf(line: string): string[] {
  return line
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split('|')
    .map((cell) => cell.trim());
}

interface Import {
  readonly specifier: string;
  readonly line: number;
}

/** Every module a source text names: import/export ... from, import(...), import x = require(...), import('x').T. */
function importsOf(fileName: string, text: string): Import[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: Import[] = [];
  const add = (node: ts.Node, specifier: ts.Node | undefined) => {
    const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
    // A computed dynamic import cannot be checked: it is named as such, and fails the arrows test.
    found.push({ specifier: specifier && ts.isStringLiteralLike(specifier) ? specifier.text : '<computed>', line });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) {
      if (node.moduleSpecifier) add(node, node.moduleSpecifier);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node, node.arguments[0]);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add(node, node.moduleReference.expression);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      add(node, node.argument.literal);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(file);
    return entry.name.endsWith('.ts') ? [file] : [];
  });
}

/** `src/app/x.ts` -> `app`; a file directly in src/ belongs to the folder of its name (`cli.ts` -> `cli`). */
function outerFolderOf(file: string): string {
  const [first, ...rest] = path.relative(SRC, file).split(path.sep);
  return rest.length === 0 ? first!.replace(/\.[cm]?[jt]s$/, '') : first!;
}

interface Edge {
  readonly file: string;
  readonly line: number;
  readonly specifier: string;
  readonly from: string;
  readonly to: string;
}

/** Inside a folder with sub-folders (`app/`, `store/`): `src/app/call/x.ts` -> `app/call`; a file at its top -> `app`. */
function innerFolderOf(file: string): string {
  const parts = path.relative(SRC, file).split(path.sep);
  return parts.length > 2 ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

/** The imports of src/ that cross from one folder to another (packages and node: builtins are not folders). */
function crossingImports(files = sourceFiles(SRC), folderOf: (file: string) => string = outerFolderOf): Edge[] {
  return files.flatMap((file) =>
    importsOf(file, readFileSync(file, 'utf8')).flatMap(({ specifier, line }) => {
      if (!specifier.startsWith('.') && specifier !== '<computed>') return [];
      const target = path.resolve(path.dirname(file), specifier);
      const outside = specifier === '<computed>' || path.relative(SRC, target).startsWith('..');
      const from = folderOf(file);
      const to = outside ? '<outside src>' : folderOf(target);
      return from === to ? [] : [{ file: path.relative(ROOT, file), line, specifier, from, to }];
    }),
  );
}

/** A cycle in a graph of folders, as `a -> b -> a`, or null. */
function findCycle(graph: Map<string, Set<string>>): string | null {
  const state = new Map<string, 'open' | 'done'>();
  const trail: string[] = [];
  const visit = (node: string): string | null => {
    if (state.get(node) === 'done') return null;
    if (state.get(node) === 'open') return [...trail.slice(trail.indexOf(node)), node].join(' -> ');
    state.set(node, 'open');
    trail.push(node);
    for (const next of graph.get(node) ?? []) {
      const cycle = visit(next);
      if (cycle !== null) return cycle;
    }
    trail.pop();
    state.set(node, 'done');
    return null;
  };
  for (const node of graph.keys()) {
    const cycle = visit(node);
    if (cycle !== null) return cycle;
  }
  return null;
}

const README = readFileSync(path.join(SRC, 'README.md'), 'utf8');
const arrows = readArrows(README);
const edges = crossingImports();
const INNER = ['app', 'store'];
const innerArrows = readArrows(README, 'inside');
const innerFiles = sourceFiles(SRC).filter((file) => INNER.includes(outerFolderOf(file)));
const innerEdges = crossingImports(innerFiles, innerFolderOf).filter((edge) => edge.to.split('/')[0] === edge.from.split('/')[0]);

/** How many floors of imports the files of `folder` stand on: a file that imports none of them is on floor 1. */
function floorsOf(folder: string): Map<string, number> {
  const files = sourceFiles(path.join(SRC, folder));
  const within = new Map(
    files.map((file) => [
      file,
      importsOf(file, readFileSync(file, 'utf8'))
        .map(({ specifier }) => path.resolve(path.dirname(file), specifier).replace(/\.js$/, '.ts'))
        .filter((target) => files.includes(target)),
    ]),
  );
  const floors = new Map<string, number>();
  const floorOf = (file: string): number => {
    const known = floors.get(file);
    if (known !== undefined) return known;
    floors.set(file, Infinity); // a cycle shows as Infinity
    const floor = 1 + Math.max(0, ...(within.get(file) ?? []).map(floorOf));
    floors.set(file, floor);
    return floor;
  };
  for (const file of files) floorOf(file);
  return floors;
}

describe("src/README.md's arrows", () => {
  it('the import finder sees static, type-only, re-exported and dynamic imports', () => {
    const text = [
      "import { a } from './a.js';",
      "import type { B } from '../b.js';",
      "export { c } from './c.js';",
      "export * from './d.js';",
      "const e = await import('./e.js');",
      "type F = import('./f.js').F;",
      "import g = require('./g.js');",
      'const h = await import(name);',
      "// import { no } from './comment.js';",
      'const text = "import { no } from \'./string.js\'";',
    ].join('\n');
    expect(importsOf('x.ts', text).map((found) => found.specifier)).toEqual([
      './a.js',
      '../b.js',
      './c.js',
      './d.js',
      './e.js',
      './f.js',
      './g.js',
      '<computed>',
    ]);
  });

  it('a cycle is found however long, and named', () => {
    const graph = (pairs: string[]) => new Map(pairs.map((pair) => [pair[0]!, new Set(pair.slice(1))]));
    expect(findCycle(graph(['ab', 'bc', 'c']))).toBeNull();
    expect(findCycle(graph(['ab', 'bc', 'ca']))).toBe('a -> b -> c -> a');
    expect(findCycle(graph(['ab', 'bcd', 'c', 'db']))).toBe('b -> d -> b');
  });

  it('the table names every folder of src/ once, and only folders that exist', () => {
    const folders = new Set(sourceFiles(SRC).map(outerFolderOf));
    expect([...arrows.keys()].sort()).toEqual([...folders].sort());
    for (const [folder, allowed] of arrows) {
      for (const target of allowed) expect(arrows.has(target), `${folder} may import \`${target}\`, which has no row`).toBe(true);
    }
  });

  it('the table allows no cycle between folders', () => {
    expect(findCycle(arrows)).toBeNull();
  });

  it('every import in src/ follows an arrow of the table', () => {
    const broken = edges
      .filter((edge) => !arrows.get(edge.from)?.has(edge.to))
      .map((edge) => {
        const allowed = [...(arrows.get(edge.from) ?? [])].join(', ') || 'nothing';
        return `${edge.file}:${edge.line} imports '${edge.specifier}' (${edge.from} -> ${edge.to}); src/README.md lets ${edge.from} import only: ${allowed}`;
      });
    expect(broken, broken.join('\n')).toEqual([]);
  });

  it('no two folders import each other, directly or through others', () => {
    const graph = new Map<string, Set<string>>();
    for (const edge of edges) graph.set(edge.from, (graph.get(edge.from) ?? new Set()).add(edge.to));
    expect(findCycle(graph)).toBeNull();
  });
});

describe("src/README.md's arrows inside app/ and store/", () => {
  it('the table names every folder inside app/ and store/ once, and allows no cycle', () => {
    expect([...innerArrows.keys()].sort()).toEqual([...new Set(innerFiles.map(innerFolderOf))].sort());
    expect(findCycle(innerArrows)).toBeNull();
  });

  it('every import between them follows an arrow of the table: none from a lower folder to a higher one', () => {
    const broken = innerEdges
      .filter((edge) => !innerArrows.get(edge.from)?.has(edge.to))
      .map((edge) => `${edge.file}:${edge.line} imports '${edge.specifier}' (${edge.from} -> ${edge.to})`);
    expect(broken, broken.join('\n')).toEqual([]);
  });

  it("app/'s files stand on at most 6 floors of imports", () => {
    const floors = floorsOf('app');
    const highest = Math.max(...floors.values());
    const top = [...floors].filter(([, floor]) => floor === highest).map(([file]) => path.relative(ROOT, file));
    expect(highest, `on floor ${highest}: ${top.join(', ')}`).toBeLessThanOrEqual(6);
  });
});
