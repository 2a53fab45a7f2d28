import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChildRegistry } from '../../../src/store/processes/child-registry.js';
import { readStart, selfIdentity } from '../../../src/store/processes/proc-reader.js';
import { tempDir } from '../../helpers/temp-dir.js';

let root: string;
beforeEach(() => (root = tempDir('children-')));
afterEach(() => rmSync(root, { recursive: true, force: true }));

const ARGS = ['run', 'llama3.2', '--nowordwrap'];

describe.skipIf(!existsSync('/proc/self/stat'))('ChildRegistry', () => {
  it('records a running child (pid, start time, command, its server) and removes the record once it exited', async () => {
    const registry = new ChildRegistry(root, selfIdentity(), () => {}, 0);
    // This process stands for the child: /proc/<pid>/stat exists.
    const exited = registry.track(process.pid, 'ollama', ARGS);
    await registry.idle();
    const files = readdirSync(registry.dir);
    expect(files).toEqual([`${process.pid}-${readStart(process.pid)}.json`]);
    const record = JSON.parse(readFileSync(path.join(registry.dir, files[0]!), 'utf8')) as Record<string, unknown>;
    expect(record).toMatchObject({
      pid: process.pid,
      start: readStart(process.pid),
      bin: 'ollama',
      args: ARGS,
      owner: { pid: process.pid, start: readStart(process.pid) },
      host: selfIdentity().place.host,
    });
    exited();
    await registry.idle();
    expect(readdirSync(registry.dir)).toEqual([]);
  });

  it('a child that exits before its record is written leaves nothing behind', async () => {
    const registry = new ChildRegistry(root, selfIdentity(), () => {}, 0);
    registry.track(process.pid, 'ollama', ARGS)();
    await registry.idle();
    expect(existsSync(registry.dir) ? readdirSync(registry.dir) : []).toEqual([]);
  });

  it('by default a child is recorded only once it has run a moment: a quick run touches no file', async () => {
    const registry = new ChildRegistry(root, selfIdentity(), () => {});
    const quick = registry.track(process.pid, 'ollama', ARGS);
    await new Promise((resolve) => setTimeout(resolve, 5));
    quick();
    await registry.idle();
    expect(existsSync(registry.dir)).toBe(false);
    const slow = registry.track(process.pid, 'ollama', ARGS);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await registry.idle();
    expect(readdirSync(registry.dir)).toHaveLength(1);
    slow();
    await registry.idle();
    expect(readdirSync(registry.dir)).toEqual([]);
  });

  it('a record that cannot be written is told once, and the run is not affected', async () => {
    const warnings: string[] = [];
    const registry = new ChildRegistry(path.join(root, 'file'), selfIdentity(), (m) => warnings.push(m), 0);
    rmSync(root, { recursive: true });
    const { writeFileSync } = await import('node:fs');
    writeFileSync(root, 'not a dir');
    registry.track(process.pid, 'ollama', ARGS);
    registry.track(process.pid, 'ollama', ARGS);
    await registry.idle();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('the orphan sweep will not know about it');
    rmSync(root);
  });
});
