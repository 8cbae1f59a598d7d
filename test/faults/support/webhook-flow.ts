import { alertmanagerBody, nodeNotReadyAlert } from '../../testkit/payloads.ts';

// Alertmanager as a pair in HA, behind a Service: each resolved KubeNodeNotReady is sent twice
// (by both Alertmanagers) to receivers taken in turn from those in service, so across a rolling
// upgrade one alert reaches an old and a new receiver. Every fifth alert is instead NPD's
// ReadonlyFilesystem condition (sent twice too, as NPD repeats it): a job of a runbook only the
// new release has, so a new receiver handing work to an old agent shows. A send that fails (connection refused or
// reset, a 5xx while a receiver stops) is sent again to the next receiver, as Alertmanager
// retries; only a 202 counts as acknowledged, and its answer names the job, or (a new receiver
// before the node's agent is upgraded) says the job is held for it.

export interface Acked {
  alert: number;
  source: 'alertmanager' | 'npd';
  node: string;
  key: string;
  queue: string;
  /** Which receiver answered (its version and name), and when. */
  by: string;
  at: number;
}

/** A signal a receiver answered 202 without storing its job: its node's agent does not run it yet (src/control/ingest/agent-gate.ts). */
export interface Held {
  alert: number;
  source: Acked['source'];
  node: string;
  detail: string;
  by: string;
  at: number;
  /** The body as sent, to send again once the agent is upgraded. */
  body: string;
}

export interface FlowResult {
  sent: number;
  acked: Acked[];
  held: Held[];
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
  const held: Held[] = [];
  let gaveUp = 0;
  let retries = 0;
  let next = 0;
  let turn = 0;
  let stopping = false;
  const keysOf = new Map<number, Set<string>>();

  const sendOnce = async (alert: number, node: string, source: Acked['source'], body: string): Promise<void> => {
    for (let attempt = 0; attempt < 40; attempt++) {
      const targets = o.targets();
      const t = targets[turn++ % Math.max(1, targets.length)];
      if (t) {
        try {
          const res = await fetch(`${t.url}/v1/${source}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${o.token}` },
            body,
            signal: AbortSignal.timeout(10_000),
          });
          const text = await res.text();
          if (res.status === 202) {
            const answer = JSON.parse(text) as { accepted: { queue: string; key: string }[]; ignored?: { reason: string; detail: string }[] };
            for (const i of answer.ignored ?? [])
              if (i.reason === 'agent-too-old') held.push({ alert, source, node, detail: i.detail, by: t.label, at: Date.now(), body });
            for (const a of answer.accepted) {
              acked.push({ alert, source, node, key: a.key, queue: a.queue, by: t.label, at: Date.now() });
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
      // Every fifth: with four nodes, each node gets both kinds.
      const source = alert % 5 === 4 ? 'npd' : 'alertmanager';
      const body = JSON.stringify(
        source === 'npd' ? readonlyCondition(node, alert) : alertmanagerBody([nodeNotReadyAlert(node, 'resolved', `upgrade${alert}`)]),
      );
      // Both Alertmanagers of the pair (NPD's repeat), a moment apart.
      await Promise.all([sendOnce(alert, node, source, body), sleep(20).then(() => sendOnce(alert, node, source, body))]);
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
      return { sent: next, acked, held, splitKeys, gaveUp, retries };
    },
  };
}

/** NPD's kernel monitor saying a file system went read-only; each alert its own transition, so its own job. */
export function readonlyCondition(node: string, alert: number, at = Date.UTC(2026, 11, 7, 9, 0, 0) + alert * 1000) {
  const time = new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return {
    node,
    conditions: [
      {
        type: 'ReadonlyFilesystem',
        status: 'True',
        lastHeartbeatTime: time,
        lastTransitionTime: time,
        reason: 'FilesystemIsReadOnly',
        message: 'EXT4-fs (dm-17): Remounting filesystem read-only',
      },
    ],
  };
}
