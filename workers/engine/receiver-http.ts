import { http } from '../../src/adapters/http/node-http.ts';
import type { Agent as HttpAgent, ClientRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

// One JSON POST from an agent to the receiver: its CA when given, a deadline, a bounded answer.
// The callers (enrolment, breaker slots) parse the answer before using any of it.
//
// Over a kept connection: a node agent's asks (enrolment, its renewals, a breaker slot at each job
// start) go to one receiver, and a storm of job starts is when they all come at once. A new
// connection per ask costs a TCP and a TLS handshake on both ends, more than the ask itself
// (bench/README.md, "The enrolled storm (issue 48)"). The connection stays open as long as the
// receiver's Keep-Alive answer says (HTTP_KEEP_ALIVE_SECONDS; Node's agent closes it a second
// before), at most KEPT_MS.

export interface ReceiverPost {
  url: URL;
  body: string;
  headers?: Record<string, string>;
  ca?: Buffer;
  timeoutMs: number;
  maxBytes: number;
  /** The connections to use (receiverAgent); default this process's (one agent process is one node). */
  agent?: HttpAgent;
}

/** An idle connection is closed after this long whatever the receiver announces: past a renewal's 30 min (± 10%). */
const KEPT_MS = 40 * 60_000;

/** Kept connections to the receiver; the CA is per request (Node's agent keys its pool by it). */
export function receiverAgent(protocol: string): HttpAgent {
  const o = { keepAlive: true, keepAliveMsecs: 30_000, timeout: KEPT_MS, scheduling: 'lifo' as const, maxFreeSockets: 4 };
  return protocol === 'https:' ? new HttpsAgent(o) : new http.Agent(o);
}

const processAgents = new Map<string, HttpAgent>();
const processAgent = (protocol: string): HttpAgent => {
  let a = processAgents.get(protocol);
  if (!a) processAgents.set(protocol, (a = receiverAgent(protocol)));
  return a;
};

/**
 * A kept connection the receiver closed just as this ask went out fails before any answer; the
 * ask is sent once more on a new one. Both asks are safe to repeat: an enrolment answers the same
 * keys, and a breaker ask names its slot by its seal (a replay takes the slot it already has).
 */
const RETRIED = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

/** Status and text of the answer; rejects when no answer came (connection refused, timeout, too long). */
export async function postToReceiver(p: ReceiverPost): Promise<{ status: number; text: string }> {
  try {
    return await postOnce(p);
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { reusedSocket?: boolean };
    if (!e.reusedSocket || !RETRIED.has(e.code ?? '')) throw err;
    return postOnce(p);
  }
}

function postOnce(p: ReceiverPost): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const send = p.url.protocol === 'https:' ? httpsRequest : http.request;
    let answered = false;
    const r: ClientRequest = send(
      p.url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(p.body), ...p.headers },
        ...(p.ca ? { ca: p.ca } : {}),
        agent: p.agent ?? processAgent(p.url.protocol),
        timeout: p.timeoutMs,
      },
      (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size <= p.maxBytes) return void chunks.push(c);
          // Rejected here: an answer that came whole in one chunk would otherwise still 'end', empty.
          const err = new Error(`the answer of ${p.url.origin} is over ${p.maxBytes} bytes`);
          reject(err);
          r.destroy(err);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    r.on('timeout', () => r.destroy(new Error(`no answer from ${p.url.origin} within ${p.timeoutMs} ms`)));
    r.on('error', (err: NodeJS.ErrnoException & { reusedSocket?: boolean }) => {
      // Node's own sign that the request went out on a kept connection (and nothing came back on it).
      if (r.reusedSocket && !answered) err.reusedSocket = true;
      reject(err);
    });
    r.end(p.body);
  });
}
