import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postToReceiver, receiverAgent } from '../../../../workers/engine/receiver-http.ts';

// An agent keeps its connection to the receiver (issue 48). A kept connection the receiver closes
// just as an ask goes out on it fails before any answer: the ask is sent once more on a new
// connection (both asks are safe to repeat).

describe('postToReceiver on a kept connection', () => {
  const served = new WeakMap<Socket, number>();
  let connections = 0;
  let requests = 0;
  /** Close a kept connection, unanswered, when its second request arrives (as a receiver's idle close racing the ask). */
  let closeSecond = true;
  /** Answer this many bytes of JSON instead (an answer past the caller's bound). */
  let answerBytes = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    requests++;
    if (answerBytes > 0) {
      req.resume();
      return res.setHeader('content-type', 'application/json').end(`{"pad":"${'x'.repeat(answerBytes - 10)}"}`);
    }
    const n = (served.get(req.socket) ?? 0) + 1;
    served.set(req.socket, n);
    if (n > 1 && closeSecond) return req.socket.destroy();
    req.resume();
    req.on('end', () => res.setHeader('content-type', 'application/json').end('{"ok":true}'));
  });
  server.on('connection', () => connections++);
  let url: URL;

  beforeAll(async () => {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/agents/breakers`);
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const post = (agent = receiverAgent('http:')) => postToReceiver({ url, body: '{}', agent, timeoutMs: 2_000, maxBytes: 1024 });

  it('reuses one connection for asks in a row', async () => {
    closeSecond = false;
    const agent = receiverAgent('http:');
    const c0 = connections;
    for (let i = 0; i < 3; i++) expect((await post(agent)).status).toBe(200);
    expect(connections - c0).toBe(1);
    agent.destroy();
  });

  it('sends an ask once more on a new connection when the kept one was closed under it, unanswered', async () => {
    closeSecond = true;
    const agent = receiverAgent('http:');
    const [c0, r0] = [connections, requests];
    expect((await post(agent)).status).toBe(200);
    expect((await post(agent)).status).toBe(200);
    // The second ask: its kept connection closed unanswered (one request seen), then sent again on a new one.
    expect({ connections: connections - c0, requests: requests - r0 }).toEqual({ connections: 2, requests: 3 });
    agent.destroy();
  });

  it('rejects an answer past its bound, never resolving with the part that came', async () => {
    closeSecond = false;
    const agent = receiverAgent('http:');
    try {
      // One chunk past the bound (it used to 'end' empty and resolve), and many.
      for (const bytes of [2_000, 64 * 1024]) {
        answerBytes = bytes;
        await expect(post(agent)).rejects.toThrow(/is over 1024 bytes/);
      }
    } finally {
      answerBytes = 0;
      agent.destroy();
    }
  });
});
