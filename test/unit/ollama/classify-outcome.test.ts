import { describe, expect, it } from 'vitest';
import { classifyOutcome } from '../../../src/ollama/classify-outcome.js';
import { processOutcome } from '../../helpers/process-outcome.js';

const exited = processOutcome;
const failedWith = (line: string) =>
  exited({ exitCode: 1, stderrTail: `\u001b[?25l\u001b[1G\u2819 \u001b[K\u001b[2K\u001b[1GError: ${line}\n` });

describe('classifyOutcome', () => {
  it.each([
    ['ok', exited({ stdout: 'fine\n\n' })],
    ['empty_output', exited({ stdout: '\n\n' })],
    ['empty_output', exited({ stdout: 'Thinking...\nall thought\n...done thinking.\n\n\n\n' })],
    ['signin_required', exited({ stdout: 'You need to be signed in to Ollama to run Cloud models.\n' })],
    ['timeout', exited({ exitCode: null, signal: 'SIGTERM', timedOut: true, stdout: 'partial' })],
    ['output_limit', exited({ exitCode: null, signal: 'SIGTERM', truncated: true })],
    ['cancelled', exited({ exitCode: null, signal: 'SIGTERM', cancelled: true })],
    ['cli_not_found', exited({ exitCode: null, spawnError: 'cannot run `ollama`: not found' })],
    ['cli_not_found', exited({ exitCode: null, spawnError: 'cannot run `ollama`: not found', spawnErrorCode: 'ENOENT' })],
    ['cli_not_found', exited({ exitCode: null, spawnError: 'cannot run `ollama`: permission denied', spawnErrorCode: 'EACCES' })],
    [
      'cli_not_found',
      exited({ exitCode: null, spawnError: 'cannot run `ollama`: not an executable', spawnErrorCode: 'ENOEXEC' }),
    ],
    ...(['EMFILE', 'ENFILE', 'EAGAIN', 'ENOMEM'] as const).map(
      (code) =>
        ['spawn_failed', exited({ exitCode: null, spawnError: `could not start (${code})`, spawnErrorCode: code })] as const,
    ),
    ['ollama_unreachable', failedWith("could not connect to ollama server, run 'ollama serve' to start it")],
    ['ollama_unreachable', failedWith('could not connect to ollama app, is it running?')],
    [
      'ollama_unreachable',
      failedWith("ollama server not responding - could not connect to ollama server, run 'ollama serve' to start it"),
    ],
    [
      'ollama_unreachable',
      failedWith('Post "http://127.0.0.1:11434/api/generate": dial tcp 127.0.0.1:11434: connect: connection refused'),
    ],
    ['server_busy', failedWith('server busy, please try again.  maximum pending requests exceeded')],
    ['model_not_found', failedWith('pull model manifest: file does not exist')],
    ['model_not_found', failedWith('model "nope" not found, try pulling it first')],
    ['unsupported_option', failedWith('"llama3.2" does not support thinking')],
    ['unsupported_option', failedWith('time: missing unit in duration "10"')],
    ['crashed', failedWith('something else broke')],
    ['crashed', exited({ exitCode: null, signal: 'SIGSEGV', stdout: 'half' })],
    ['crashed', exited({ exitCode: 2 })],
  ] as const)('%s <- %#', (status, outcome) => {
    expect(classifyOutcome(outcome).status).toBe(status);
  });

  it('carries the CLI error line as the error text', () => {
    expect(classifyOutcome(failedWith('server busy, please try again.  maximum pending requests exceeded')).error).toBe(
      'server busy, please try again.  maximum pending requests exceeded',
    );
    expect(classifyOutcome(exited({ exitCode: null, signal: 'SIGSEGV' })).error).toBe('the ollama CLI was killed by SIGSEGV');
  });

  it('a timeout keeps the partial answer', () => {
    expect(classifyOutcome(exited({ timedOut: true, exitCode: null, stdout: 'partial answ' })).answer).toBe('partial answ');
  });
});

describe('classifyOutcome: the real CLI failures (ollama-cli.md, v0.33)', () => {
  const SIGNIN_NOW =
    'You need to be signed in to Ollama to run Cloud models.\n\nIf your browser did not open, navigate to:\n    https://ollama.com/connect?name=box&key=abc\n\n';
  const SIGNIN_OLD =
    'You need to be signed in to Ollama to run Cloud models.\n\nTo sign in, navigate to:\n    https://ollama.com/connect?x=1\n\n';

  it.each([
    ['ollama_unreachable', 'Head "http://10.0.0.5:11434/": dial tcp 10.0.0.5:11434: connect: no route to host'],
    ['ollama_unreachable', 'Head "http://gpu-box:11434/": dial tcp: lookup gpu-box on 127.0.0.53:53: no such host'],
    ['ollama_unreachable', 'Head "http://10.0.0.5:11434/": dial tcp 10.0.0.5:11434: i/o timeout'],
    ['ollama_unreachable', 'Head "http://10.0.0.5:11434/": dial tcp 10.0.0.5:11434: connect: connection timed out'],
    ['ollama_unreachable', 'Head "http://10.0.0.5:11434/": dial tcp 10.0.0.5:11434: connect: network is unreachable'],
    ['server_busy', '503 Service Unavailable: server busy, please try again.  maximum pending requests exceeded'],
    [
      'pull_failed',
      'pull model manifest: Get "https://registry.ollama.ai/v2/library/mistral/manifests/latest": dial tcp: lookup registry.ollama.ai on 127.0.0.53:53: no such host',
    ],
    [
      'pull_failed',
      'pull model manifest: Get "https://registry.ollama.ai/v2/team/coder/manifests/7b": dial tcp 104.21.75.227:443: connect: connection refused',
    ],
    ['model_not_found', 'pull model manifest: file does not exist'],
    [
      'model_not_found',
      'pull model manifest: 412: this model requires a newer version of Ollama, please download the latest version',
    ],
    [
      'pull_failed',
      'pull model manifest: Get "https://registry.ollama.ai/v2/library/qwen3/manifests/8b": net/http: TLS handshake timeout',
    ],
    [
      'model_not_found',
      'pull model manifest: file does not exist\n\n"glm-5:cloud" is available as a cloud model. Try:\n  ollama run glm-5:cloud',
    ],
    ['cloud_access_denied', '403 Forbidden: this model requires a subscription, upgrade for access: https://ollama.com/upgrade'],
    ['cloud_access_denied', '403 Forbidden: ollama cloud is disabled: remote model is unavailable'],
    ['rate_limited', "429 Too Many Requests: you've reached your hourly usage limit, please upgrade to continue"],
    ['rate_limited', "429 Too Many Requests: you've reached your weekly usage limit, please upgrade to continue"],
    [
      'prompt_too_long',
      '400 Bad Request: the prompt is longer than the context length currently available to the model; shorten the prompt, adjust the context length in settings, or use a model with a longer context length',
    ],
    [
      'prompt_too_long',
      "500 Internal Server Error: input length (9000 tokens) exceeds the model's maximum context length (4096 tokens)",
    ],
    ['model_unsupported', '400 Bad Request: "nomic-embed-text" does not support generate'],
    ['model_unsupported', 'image generation models are not currently supported'],
    ['unsupported_option', '400 Bad Request: "llama3.2:latest" does not support thinking'],
    ['crashed', '500 Internal Server Error: llama-server process has terminated: exit status 2'],
    ['crashed', '500 Internal Server Error: llama runner process has terminated: signal: killed'],
    [
      'crashed',
      '500 Internal Server Error: model runner has unexpectedly stopped, this may be due to resource limitations or an internal error, check ollama server logs for details',
    ],
    [
      'crashed',
      '500 Internal Server Error: llama-server reported out-of-memory during startup: cudaMalloc failed: out of memory',
    ],
    ['input_file_error', 'invalid file type: text/plain; charset=utf-8'],
    ['input_file_error', 'file size exceeds maximum limit (100MB)'],
  ] as const)('%s <- %s', (status, line) => {
    expect(classifyOutcome(failedWith(line)).status).toBe(status);
  });

  it('file errors are recognised by the line the CLI prints before them, whatever the error', () => {
    for (const problem of ['open /home/me/a.png: permission denied', 'read /tmp/album.png: is a directory', 'EOF']) {
      const outcome = exited({
        exitCode: 1,
        stderrTail: `\u001b[1G\u280b \u001b[KCouldn't process file: ${JSON.stringify(problem)}\n\u001b[2K\u001b[1GError: ${problem}\n`,
      });
      const c = classifyOutcome(outcome);
      expect(c.status).toBe('input_file_error');
      expect(c.error).toContain(problem);
      expect(c.error).toMatch(/Remove the path from the prompt/);
    }
  });

  it('a too-long prompt tells the caller what to do', () => {
    const c = classifyOutcome(failedWith('400 Bad Request: the prompt is longer than the context length currently available'));
    expect(c.error).toMatch(/shorten the prompt or split it/);
    expect(c.error).toMatch(/a model with a larger context/);
  });

  it('keeps the lines of a multi-line error (the cloud hint)', () => {
    const c = classifyOutcome(
      failedWith(
        'pull model manifest: file does not exist\n\n"glm-5:cloud" is available as a cloud model. Try:\n  ollama run glm-5:cloud',
      ),
    );
    expect(c.error).toBe(
      'pull model manifest: file does not exist\n"glm-5:cloud" is available as a cloud model. Try:\nollama run glm-5:cloud',
    );
  });

  it('sign-in only for the whole-stdout notice at exit 0, in both wordings; an answer quoting it is ok', () => {
    expect(classifyOutcome(exited({ stdout: SIGNIN_NOW })).status).toBe('signin_required');
    expect(classifyOutcome(exited({ stdout: SIGNIN_OLD })).status).toBe('signin_required');
    expect(classifyOutcome(exited({ stdout: SIGNIN_NOW })).answer).toBe('');
    expect(classifyOutcome(exited({ stdout: SIGNIN_NOW })).error).toContain('open https://ollama.com/connect?name=box&key=abc');
    const quoting = `The CLI prints "You need to be signed in to Ollama" when you are logged out.\n\n`;
    expect(classifyOutcome(exited({ stdout: quoting })).status).toBe('ok');
    expect(classifyOutcome(exited({ stdout: `Sure:\n${SIGNIN_NOW}` })).status).toBe('ok');
    expect(classifyOutcome(exited({ stdout: `${SIGNIN_NOW}and more text\n\n` })).status).toBe('ok');
  });

  it('an embedding vector (one JSON array of numbers and a single newline) is model_unsupported, not ok', () => {
    const c = classifyOutcome(exited({ stdout: '[0.0123,-0.0456,0.1,1e-05]\n' }));
    expect(c.status).toBe('model_unsupported');
    expect(c.answer).toBe('');
    expect(c.error).toMatch(/embedding model/);
    // a text model asked for numbers ends its answer with two newlines
    expect(classifyOutcome(exited({ stdout: '[2,3,5,7,11]\n\n' })).status).toBe('ok');
  });
});
