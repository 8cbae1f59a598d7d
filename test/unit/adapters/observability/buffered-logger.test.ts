import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

// The receiver logs through a buffered stdout (issue 8): lines must still show up on a quiet
// receiver within about a second, and none may be lost when the process exits.

const logger = new URL('../../../../src/adapters/observability/logger.ts', import.meta.url).href;

function run(script: string): { lines: () => string[]; firstLineAfterMs: Promise<number>; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ['--input-type=module', '-e', `import { createLogger } from ${JSON.stringify(logger)};\n${script}`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const started = Date.now();
  let out = '';
  let resolveFirst: (ms: number) => void = () => {};
  const firstLineAfterMs = new Promise<number>((r) => (resolveFirst = r));
  child.stdout.on('data', (c: Buffer) => {
    out += c.toString('utf8');
    if (out.includes('\n')) resolveFirst(Date.now() - started);
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { lines: () => out.split('\n').filter((l) => l.length > 0), firstLineAfterMs, exited };
}

describe('buffered logger', () => {
  it('holds a lone line at most about a second on a process that stays up', async () => {
    const p = run(`const log = createLogger('t', 'info', { buffered: true });
setTimeout(() => log.info({ n: 1 }, 'quiet line'), 300);
setTimeout(() => process.exit(0), 4000);`);
    const ms = await p.firstLineAfterMs;
    // Logged at ~300 ms, flushed by the next tick of the 1 s flusher: well before the exit at 4 s.
    expect(ms).toBeLessThan(2_500);
    expect(JSON.parse(p.lines()[0]!)).toMatchObject({ msg: 'quiet line', n: 1, name: 't' });
    await p.exited;
  });

  it('writes every held line when the process exits right after logging them', async () => {
    const p = run(`const log = createLogger('t', 'info', { buffered: true });
for (let i = 0; i < 3; i++) log.info({ i }, 'line');
process.exit(0);`);
    expect(await p.exited).toBe(0);
    expect(p.lines().map((l) => JSON.parse(l).i)).toEqual([0, 1, 2]);
  });

  it('still redacts tokens', async () => {
    const p = run(`const log = createLogger('t', 'info', { buffered: true });
log.info({ token: 'secret-value' }, 'with a token');
process.exit(0);`);
    await p.exited;
    expect(p.lines()[0]).not.toContain('secret-value');
    expect(JSON.parse(p.lines()[0]!)).toMatchObject({ token: '[redacted]' });
  });
});
