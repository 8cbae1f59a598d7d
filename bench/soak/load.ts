import { alertmanagerBody, nodeNotReadyAlert } from '../../test/testkit/payloads.ts';
import type { Tracker } from './tracker.ts';
import { fleetNode, realNode, SOAK_TOKEN } from './topology.ts';

// Webhook load as Alertmanager sends it: resolved KubeNodeNotReady alerts (each a new incident,
// its own fingerprint), one per notification at a steady rate, plus a burst of grouped
// notifications every `burstEverySec` (a zone's nodes coming back together). Every notification
// is retried on 5xx and connection errors with backoff (250 ms doubling to 4 s), as Alertmanager
// retries a webhook, until it is answered 202; each job a 202 names is given to the tracker.

export interface LoadShape {
  /** Single-alert notifications per second. */
  rate: number;
  burstEverySec: number;
  burstBodies: number;
  burstAlerts: number;
  /** Share of single alerts for the real agents' nodes (their runbooks take seconds). */
  realShare: number;
  agents: number;
  realAgents: number;
}

export interface LoadStats {
  sent: number;
  accepted: number;
  /** Notifications still being retried at the end. */
  unanswered: number;
  /** Answers other than 202 and 503 (and connection errors), by status. */
  otherStatuses: Record<string, number>;
  attempts: number;
  retried: number;
}

export class Load {
  readonly stats: LoadStats = { sent: 0, accepted: 0, unanswered: 0, otherStatuses: {}, attempts: 0, retried: 0 };
  private n = 0;
  private stopped = false;
  private readonly inFlight = new Set<Promise<void>>();
  private timers: NodeJS.Timeout[] = [];

  private readonly url: string;
  private readonly shape: LoadShape;
  private readonly tracker: Tracker;

  constructor(url: string, shape: LoadShape, tracker: Tracker) {
    this.url = url;
    this.shape = shape;
    this.tracker = tracker;
  }

  start(): void {
    const single = (): void => {
      if (this.stopped) return;
      const real = this.shape.realAgents > 0 && Math.random() < this.shape.realShare;
      const node = real ? realNode(Math.floor(Math.random() * this.shape.realAgents)) : fleetNode(Math.floor(Math.random() * this.shape.agents));
      this.notify([node]);
      // Exponential gaps: arrivals as independent alerts make them.
      this.timers[0] = setTimeout(single, -Math.log(1 - Math.random()) * (1000 / this.shape.rate));
    };
    single();
    this.timers[1] = setInterval(() => {
      for (let b = 0; b < this.shape.burstBodies; b++) {
        this.notify(Array.from({ length: this.shape.burstAlerts }, () => fleetNode(Math.floor(Math.random() * this.shape.agents))));
      }
    }, this.shape.burstEverySec * 1000);
  }

  private notify(nodes: string[]): void {
    const i = this.n++;
    const alerts = nodes.map((node, k) => nodeNotReadyAlert(node, 'resolved', `soak${i}x${k}`));
    const body = JSON.stringify(alertmanagerBody(alerts));
    this.stats.sent++;
    const p = this.deliver(body, nodes).finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }

  private async deliver(body: string, nodes: string[]): Promise<void> {
    const sentAt = Date.now();
    let backoff = 250;
    const before: number[] = [];
    for (let attempt = 0; ; attempt++) {
      this.stats.attempts++;
      if (attempt === 1) this.stats.retried++;
      const status = await fetch(`${this.url}/v1/alertmanager`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${SOAK_TOKEN}` },
        body,
        signal: AbortSignal.timeout(10_000),
      }).then(
        async (res) => {
          const text = await res.text();
          if (res.status === 202) {
            const acceptedAt = Date.now();
            const json = JSON.parse(text) as { accepted: { id: string; queue: string; node?: string }[] };
            for (const [k, a] of json.accepted.entries()) this.tracker.accepted(a.id, a.queue, a.node ?? nodes[k]!, sentAt, acceptedAt, before);
          }
          return res.status;
        },
        () => 0,
      );
      if (status === 202) {
        this.stats.accepted++;
        return;
      }
      before.push(status);
      if (status !== 0 && status < 500) {
        this.stats.otherStatuses[status] = (this.stats.otherStatuses[status] ?? 0) + 1;
        return;
      }
      if (this.stopped && Date.now() - sentAt > 120_000) {
        this.stats.unanswered++;
        return;
      }
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(4_000, backoff * 2);
    }
  }

  /** Stops new notifications; resolves when every one sent was answered (or given up after two minutes of retries). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timers[0]);
    clearInterval(this.timers[1]);
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }
}
