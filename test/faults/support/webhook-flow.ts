import { alertmanagerBody, nodeNotReadyAlert } from '../../testkit/payloads.ts';

// Alertmanager as a pair in HA, behind a Service: each resolved KubeNodeNotReady is sent twice
// (by both Alertmanagers) to receivers taken in turn from those in service, so across a rolling
// upgrade one alert reaches an old and a new receiver. A send that fails (connection refused or
// reset, a 5xx while a receiver stops) is sent again to the next receiver, as Alertmanager
// retries; only a 202 counts as acknowledged, and its answer names the job.

export interface Acked {
  alert: number;
  node: string;
  key: string;
  queue: string;
  /** Which receiver answered (its version and name), and when. */
  by: string;
  at: number;
}

export interface FlowResult {
  sent: number;
  acked: Acked[];
  /** Alerts whose two sends were answered with different jobs (the key must not depend on the receiver). */
  splitKeys: { alert: number; keys: string[] }[];
  /** Sends that found no receiver answering 202 after every retry. */
  gaveUp: number;
  retries: number;
}

export interface FlowOptions {
  token: string;
  nodes: readonly string[];
  /** The receivers in service now (the balancer's endpoints), e.g. `{ url, label }`. */
  targets: () => readonly { url: string; label: string }[];
  /** Alerts per second, all senders together. */
  perSecond: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function startWebhookFlow(o: FlowOptions): { stop(): Promise<FlowResult> } {
  const acked: Acked[] = [];
  let gaveUp = 0;
  let retries = 0;
  let next = 0;
  let turn = 0;
  let stopping = false;
  const keysOf = new Map<number, Set<string>>();

  const sendOnce = async (alert: number, node: string, body: string): Promise<void> => {
    for (let attempt = 0; attempt < 40; attempt++) {
      const targets = o.targets();
      const t = targets[turn++ % Math.max(1, targets.length)];
      if (t) {
        try {
          const res = await fetch(`${t.url}/v1/alertmanager`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${o.token}` },
            body,
            signal: AbortSignal.timeout(10_000),
          });
          const text = await res.text();
          if (res.status === 202) {
            const answer = JSON.parse(text) as { accepted: { queue: string; key: string }[] };
            for (const a of answer.accepted) {
              acked.push({ alert, node, key: a.key, queue: a.queue, by: t.label, at: Date.now() });
              const seen = keysOf.get(alert) ?? new Set<string>();
              seen.add(a.key);
              keysOf.set(alert, seen);
            }
            return;
          }
          if (res.status < 500) throw new Error(`${t.label} answered ${res.status}: ${text.slice(0, 300)}`);
        } catch (err) {
          if (err instanceof Error && /answered 4/.test(err.message)) throw err;
        }
      }
      retries++;
      await sleep(100);
    }
    gaveUp++;
  };

  const SENDERS = 3;
  const sender = async (): Promise<void> => {
    const gap = (1000 * SENDERS) / o.perSecond;
    const start = Date.now();
    let n = 0;
    while (!stopping) {
      const alert = next++;
      const node = o.nodes[alert % o.nodes.length]!;
      const body = JSON.stringify(alertmanagerBody([nodeNotReadyAlert(node, 'resolved', `upgrade${alert}`)]));
      // Both Alertmanagers of the pair, a moment apart.
      await Promise.all([sendOnce(alert, node, body), sleep(20).then(() => sendOnce(alert, node, body))]);
      n++;
      const due = start + n * gap - Date.now();
      if (due > 0) await sleep(due);
    }
  };
  const running = Promise.all(Array.from({ length: SENDERS }, () => sender()));
  return {
    stop: async () => {
      stopping = true;
      await running;
      const splitKeys = [...keysOf].filter(([, k]) => k.size > 1).map(([alert, k]) => ({ alert, keys: [...k] }));
      return { sent: next, acked, splitKeys, gaveUp, retries };
    },
  };
}
