// test/fixtures/fake-ollama.mjs alone (per-process mode) behaves like the real `ollama` CLI as the
// shared notes (ollama-cli.md) describe it, and its test controls (FAKE_OLLAMA_* env, @fake: directives) work.
// This file: cloud models, model names and installation, files named in the prompt.
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'vitest';
import { strip, CLOUD_MSG, tmpDir, run, errorLines, lastErrLine, NO_WRAP } from './cli-harness.js';

describe.concurrent('cloud models', () => {
  for (const model of ['gpt-oss:120b-cloud', 'qwen3-coder:480b-cloud', 'x:cloud']) {
    it(`${model} without sign-in prints the sign-in message on stdout and exits 0`, async ({ expect }) => {
      const r = await run(['run', model, ...NO_WRAP], { input: 'hi' });
      expect(r.exitCode).toBe(0);
      expect(r.stdout.startsWith(CLOUD_MSG)).toBe(true);
      expect(r.stdout).not.toContain('fake answer');
      expect(errorLines(r.stderr)).toEqual([]);
    });
  }

  it('with FAKE_OLLAMA_SIGNED_IN=1 the cloud model answers', async ({ expect }) => {
    const r = await run(['run', 'qwen3-coder:480b-cloud', ...NO_WRAP], { input: 'hi', env: { FAKE_OLLAMA_SIGNED_IN: '1' } });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('fake answer from qwen3-coder:480b-cloud: hi\n\n');
  });
});

describe.concurrent('model names and installation', () => {
  for (const name of [
    'llama3.2',
    'llama3.2:latest',
    'library/llama3.2',
    'library/llama3.2:latest',
    'registry.ollama.ai/library/llama3.2',
    'LLAMA3.2',
  ]) {
    it(`${name} is the installed llama3.2:latest (no pull)`, async ({ expect }) => {
      const r = await run(['run', name, ...NO_WRAP], { input: 'hi' });
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toBe(`fake answer from ${name}: hi\n\n`);
      expect(r.stderr).not.toContain('pulling');
    });
  }

  it('FAKE_OLLAMA_MODELS decides what is installed', async ({ expect }) => {
    const env = { FAKE_OLLAMA_MODELS: 'qwen2.5-coder:7b,library/mistral' };
    expect((await run(['run', 'mistral', ...NO_WRAP], { input: 'hi', env })).exitCode).toBe(0);
    const r = await run(['run', 'llama3.2', ...NO_WRAP], { input: 'hi', env });
    expect(r.exitCode).toBe(1);
    expect(lastErrLine(r.stderr)).toBe('Error: pull model manifest: file does not exist');
  });

  it('a tag other than the installed one is not installed', async ({ expect }) => {
    const r = await run(['run', 'qwen3', ...NO_WRAP], { input: 'hi' });
    expect(lastErrLine(r.stderr)).toBe('Error: pull model manifest: file does not exist');
  });

  it('FAKE_OLLAMA_PULLABLE models are pulled (progress on stderr), run, and not kept', async ({ expect }) => {
    const env = { FAKE_OLLAMA_PULLABLE: 'mistral:7b' };
    const r = await run(['run', 'mistral:7b', ...NO_WRAP], { input: 'hi', env });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('fake answer from mistral:7b: hi\n\n');
    const err = strip(r.stderr);
    for (const s of ['pulling manifest', 'verifying sha256 digest', 'writing manifest', 'success']) expect(err).toContain(s);
    expect((await run(['list'], { env })).stdout).not.toContain('mistral');
    expect(strip((await run(['run', 'mistral:7b', ...NO_WRAP], { input: 'hi', env })).stderr)).toContain('pulling manifest');
  });
});

describe.concurrent('files named in the prompt (multimodal models)', () => {
  const env = { FAKE_OLLAMA_MODELS: 'llava:7b,llama3.2' };
  const PNG = Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'), Buffer.alloc(64, 1)]);

  it('a vision model reads an image the prompt names: "Added image" on stderr, the path leaves the prompt', async ({
    expect,
  }) => {
    const dir = tmpDir();
    const file = path.join(dir, 'cat.png');
    fs.writeFileSync(file, PNG);
    const r = await run(['run', 'llava:7b', ...NO_WRAP], { input: `what is in ${file} ?`, env });
    expect(r.exitCode).toBe(0);
    expect(strip(r.stderr)).toContain(`Added image '${file}'\n`);
    expect(r.stdout).toBe('fake answer from llava:7b: what is in  ?\n\n');
    const wav = path.join(dir, 'note.wav');
    fs.writeFileSync(wav, Buffer.concat([Buffer.from('RIFF\0\0\0\0WAVEfmt ', 'latin1'), Buffer.alloc(32, 1)]));
    expect(strip((await run(['run', 'llava:7b'], { input: `hear ${wav}`, env })).stderr)).toContain(`Added audio '${wav}'\n`);
  });

  it('a text model does not read it; a path that does not exist is left alone', async ({ expect }) => {
    const dir = tmpDir();
    const file = path.join(dir, 'cat.png');
    fs.writeFileSync(file, 'not an image');
    const text = await run(['run', 'llama3.2', ...NO_WRAP], { input: `see ${file}`, env });
    expect(text.exitCode).toBe(0);
    expect(text.stdout).toBe(`fake answer from llama3.2: see ${file}\n\n`);
    const missing = await run(['run', 'llava:7b', ...NO_WRAP], { input: `see ${dir}/none.jpg`, env });
    expect(missing.exitCode).toBe(0);
    expect(missing.stdout).toBe(`fake answer from llava:7b: see ${dir}/none.jpg\n\n`);
  });

  it('a file that is not an image fails with "invalid file type", after a "Couldn\'t process file" line', async ({ expect }) => {
    const dir = tmpDir();
    const file = path.join(dir, 'notes.jpg');
    fs.writeFileSync(file, 'just text\n');
    const r = await run(['run', 'llava:7b', ...NO_WRAP], { input: `look at ${file}`, env });
    expect(r.exitCode).toBe(1);
    expect(r.stdout).toBe('');
    expect(strip(r.stderr)).toContain('Couldn\'t process file: "invalid file type: text/plain; charset=utf-8"\n');
    expect(lastErrLine(r.stderr)).toBe('Error: invalid file type: text/plain; charset=utf-8');
  });

  it("a directory named like an image fails with Go's read error", async ({ expect }) => {
    const dir = tmpDir();
    const file = path.join(dir, 'album.png');
    fs.mkdirSync(file);
    const r = await run(['run', 'llava:7b'], { input: `open ${file}`, env });
    expect(r.exitCode).toBe(1);
    expect(lastErrLine(r.stderr)).toBe(`Error: read ${file}: is a directory`);
  });

  // root opens any file, so EACCES cannot be produced here as root
  it.skipIf(process.getuid?.() === 0)('an unreadable file fails with "permission denied"', async ({ expect }) => {
    const dir = tmpDir();
    const file = path.join(dir, 'secret.png');
    fs.writeFileSync(file, PNG);
    fs.chmodSync(file, 0o000);
    const r = await run(['run', 'llava:7b'], { input: `open ${file}`, env });
    expect(r.exitCode).toBe(1);
    expect(lastErrLine(r.stderr)).toBe(`Error: open ${file}: permission denied`);
  });
});
