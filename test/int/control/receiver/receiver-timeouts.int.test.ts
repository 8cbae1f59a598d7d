import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { testConfig } from '../../../support/config.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';

// Slow senders (issue 20, item 7): with Node's default requestTimeout of 300 s, a client that
// trickles a body byte by byte held its socket for five minutes. Here, on loopback, a body and a
// header block each trickled below their deadline are cut off and the socket closed. The answer
// is 503 with Retry-After, not Node's 408: a webhook sender retries a 5xx and drops a 4xx, and a
// receiver too busy to read a body in time must not lose what was in it.

const prefix = uniquePrefix('timeouts');
let receiver: Receiver;
const HEADERS_MS = 400;
const REQUEST_MS = 800;

beforeAll(async () => {
  receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, httpHeadersTimeoutMs: HEADERS_MS, httpRequestTimeoutMs: REQUEST_MS }));
});
afterAll(async () => {
  await receiver?.close();
  await dropPrefix(prefix);
});

/**
 * Opens a socket, writes `first`, then one byte of `drip` every 100 ms; resolves when the server
 * closes it (or after `giveUpMs`). With `next`: `first` is a whole request, and `next` is written
 * on the same (kept-alive) socket once its answer has come, the drip after it.
 */
function trickle(first: string, drip: string, opts: { giveUpMs?: number; next?: string } = {}): Promise<{ closedAfterMs: number | undefined; answer: string }> {
  const { port } = new URL(receiver.url);
  return new Promise((resolve) => {
    const started = Date.now();
    let answer = '';
    let dripping = opts.next === undefined;
    const socket: Socket = connect(Number(port), '127.0.0.1', () => socket.write(first));
    let i = 0;
    const timer = setInterval(() => {
      if (dripping && !socket.destroyed && i < drip.length) socket.write(drip[i++]!);
    }, 100);
    const done = (closedAfterMs: number | undefined): void => {
      clearInterval(timer);
      clearTimeout(giveUp);
      socket.destroy();
      resolve({ closedAfterMs, answer });
    };
    const giveUp = setTimeout(() => done(undefined), opts.giveUpMs ?? 5_000);
    socket.on('data', (d) => {
      answer += d.toString();
      // The first answer is whole: its JSON body has closed.
      if (!dripping && /\r\n\r\n[\s\S]*\}$/.test(answer)) {
        dripping = true;
        socket.write(opts.next!);
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => done(Date.now() - started));
  });
}

describe('the receiver against slow senders', () => {
  it('closes the socket of a body trickled past the request timeout, with 503 and Retry-After (a sender retries it)', async () => {
    const head = `POST /v1/alertmanager HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`;
    const r = await trickle(head, '{'.padEnd(1000, ' '));
    expect(r.closedAfterMs, 'the socket is still open after 5 s').toBeDefined();
    expect(r.closedAfterMs!).toBeLessThan(REQUEST_MS + 2_500);
    expect(r.answer).toMatch(/^HTTP\/1\.1 503 /);
    expect(r.answer).toMatch(/\r\nRetry-After: 5\r\n/);
  });

  it('closes the socket of headers trickled past the headers timeout', async () => {
    const r = await trickle('GET /healthz HTTP/1.1\r\n', 'X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa');
    expect(r.closedAfterMs, 'the socket is still open after 5 s').toBeDefined();
    expect(r.closedAfterMs!).toBeLessThan(HEADERS_MS + 2_500);
  });

  it('answers a malformed request 400 and oversized headers 431, as Node does', async () => {
    const bad = await trickle('NOT HTTP\r\n\r\n', '');
    expect(bad.answer).toMatch(/^HTTP\/1\.1 400 /);
    const big = await trickle(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, '');
    expect(big.answer).toMatch(/^HTTP\/1\.1 431 /);
  });

  it('answers on a kept-alive socket that has already carried a response (a 431 and a 503 there were lost: no answer, "other side closed")', async () => {
    const ok = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';
    const big = await trickle(ok, '', { next: `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n` });
    expect(big.answer).toMatch(/^HTTP\/1\.1 200 [\s\S]*HTTP\/1\.1 431 /);
    const slow = await trickle(ok, '{'.padEnd(1000, ' '), {
      next: 'POST /v1/alertmanager HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n',
    });
    expect(slow.answer).toMatch(/^HTTP\/1\.1 200 [\s\S]*HTTP\/1\.1 503 [\s\S]*Retry-After: 5\r\n/);
  });

  it('still answers a request sent at a normal pace', async () => {
    const res = await fetch(`${receiver.url}/healthz`);
    expect(res.status).toBe(200);
  });
});
