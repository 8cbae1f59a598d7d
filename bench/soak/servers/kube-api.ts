import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { startFakeKubeApi } from '../../../test/testkit/fake-kube-api.ts';

// The soak's API server: the fake (test/testkit/fake-kube-api.ts) behind a front that a fault
// turns slow or unavailable. The front forwards every request as is; the parent sends
// `{ mode: 'ok' | 'slow' | '503', delayMs? }` over IPC. Prints `URL <front>` once listening.
// KUBE_NODES: the Nodes the real agents serve (their labels and the drain check read them).

const api = await startFakeKubeApi();
for (const name of (process.env['KUBE_NODES'] ?? '').split(',').filter(Boolean)) {
  api.put({ apiVersion: 'v1', kind: 'Node', metadata: { name }, spec: {} });
}
api.put({ apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'kured', namespace: 'kube-system' } });
const target = new URL(api.url);

let mode: 'ok' | 'slow' | '503' = 'ok';
let delayMs = 3_000;
process.on('message', (m: { mode?: typeof mode; delayMs?: number }) => {
  if (m.mode) mode = m.mode;
  if (m.delayMs) delayMs = m.delayMs;
});

function forward(req: IncomingMessage, res: ServerResponse): void {
  const up = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  up.on('error', () => res.destroy());
  res.on('close', () => up.destroy());
  req.pipe(up);
}

const unavailable = JSON.stringify({
  kind: 'Status',
  apiVersion: 'v1',
  status: 'Failure',
  message: 'soak: API server unavailable',
  reason: 'ServiceUnavailable',
  code: 503,
});

const front = createServer((req, res) => {
  if (mode === '503') {
    req.resume();
    res.writeHead(503, { 'content-type': 'application/json' }).end(unavailable);
    return;
  }
  if (mode === 'slow') {
    req.pause();
    setTimeout(() => {
      req.resume();
      forward(req, res);
    }, delayMs);
    return;
  }
  forward(req, res);
});
front.listen(0, '127.0.0.1');
await once(front, 'listening');
const url = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
if (process.send) process.send({ line: `URL ${url}` });
else process.stdout.write(`URL ${url}\n`);
