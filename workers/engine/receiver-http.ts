import { http } from '../../src/adapters/http/node-http.ts';
import { request as httpsRequest } from 'node:https';

// One JSON POST from an agent to the receiver: its CA when given, a deadline, a bounded answer.
// The callers (enrolment, breaker slots) parse the answer before using any of it.

export interface ReceiverPost {
  url: URL;
  body: string;
  headers?: Record<string, string>;
  ca?: Buffer;
  timeoutMs: number;
  maxBytes: number;
}

/** Status and text of the answer; rejects when no answer came (connection refused, timeout, too long). */
export function postToReceiver(p: ReceiverPost): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const send = p.url.protocol === 'https:' ? httpsRequest : http.request;
    const r = send(
      p.url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(p.body), ...p.headers },
        ...(p.ca ? { ca: p.ca } : {}),
        timeout: p.timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > p.maxBytes) r.destroy(new Error(`the answer of ${p.url.origin} is over ${p.maxBytes} bytes`));
          else chunks.push(c);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    r.on('timeout', () => r.destroy(new Error(`no answer from ${p.url.origin} within ${p.timeoutMs} ms`)));
    r.on('error', reject);
    r.end(p.body);
  });
}
