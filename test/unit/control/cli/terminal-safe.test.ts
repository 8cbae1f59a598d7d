import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../../../src/control/cli/main.ts';
import { terminalSafe } from '../../../../src/control/cli/terminal-safe.ts';

// The CLI prints API data; none of it may reach the terminal as control characters (issue 20,
// item 7). A loopback server answers like the receiver, with escape sequences in every field.

const ESC = '\u001b';
const HOSTILE = `${ESC}]0;pwned${'\u0007'}${ESC}[2J${ESC}[1A\rrewritten${'\u009b'}31mred${'\u0085'}${'\u202e'}txt.exe${'\u0008'}`;
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

const job = {
  id: `job-${HOSTILE}`,
  runbook: 'residual-multipath-cleanup',
  node: `worker-1${HOSTILE}`,
  queue: 'node-worker-1',
  state: 'failed',
  attemptsMade: 1,
  createdAt: '2026-12-01T00:00:00Z',
  failedReason: `failed: ${HOSTILE}`,
  result: {
    mode: 'enforce',
    outcome: 'failed',
    summary: `summary ${HOSTILE}`,
    refusals: [`refused ${HOSTILE}`],
    steps: [{ id: 'flush', status: 'failed', description: `multipath -f ${HOSTILE}` }],
    commands: [{ argv: ['multipath', '-ll'], exitCode: 1, durationMs: 3, stdout: '', stderr: `device ${HOSTILE} gone` }],
  },
};

let server: Server;
let url: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.url?.startsWith('/v1/jobs/') && req.url.endsWith('/approval')) return res.writeHead(404).end('{"error":"none"}');
    if (req.url?.startsWith('/v1/jobs/')) return res.end(JSON.stringify(job));
    if (req.url?.startsWith('/v1/jobs')) return res.end(JSON.stringify({ jobs: [{ ...job, outcome: `x${HOSTILE}` }] }));
    res.writeHead(500).end(JSON.stringify({ error: `boom ${HOSTILE}` }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const cli = async (...argv: string[]): Promise<{ code: number; printed: string }> => {
  const lines: string[] = [];
  const code = await run(
    argv,
    { VOLUME_MEDIC_URL: url },
    (s) => lines.push(s),
    (s) => lines.push(s),
  );
  return { code, printed: lines.join('\n') };
};

describe('the CLI prints no terminal control characters from API data', () => {
  it('strips C0 (but newline and tab), DEL, C1 and bidi overrides', () => {
    expect(terminalSafe(`a\tb\nc${HOSTILE}\u007f`)).toBe('a\tb\nc]0;pwned[2J[1Arewritten31mredtxt.exe');
  });

  it.each(['jobs', 'jobs --json', 'job x', 'job x --json', 'approvals'])('`volume-medic %s`', async (command) => {
    const { printed } = await cli(...command.split(' '));
    expect(printed.length).toBeGreaterThan(20);
    expect(printed).toMatch(/pwned|boom/); // the data is shown, defanged
    expect(printed).not.toMatch(CONTROL);
  });
});
