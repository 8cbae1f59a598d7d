import { readFileSync } from 'node:fs';
import { alertmanagerBody, nodeNotReadyAlert } from './payloads.ts';

// Request bodies for the benchmarks. A unique body differs only in the incident's identity (the
// alert fingerprint, the event's uid and boot id), so every request makes new jobs; bodies are
// made by replacing a marker in a pre-serialised template, so the load generator spends almost
// nothing building them.

const MARK = '__N__';

export interface Payload {
  name: string;
  path: string;
  /** Jobs (alerts or events) each request carries. */
  items: number;
  template: string;
  /**
   * The same incidents in a body that differs from `body` (request n): a field outside their
   * identity changes, as when another Alertmanager of an HA pair (its externalURL) or a later
   * count of the same Event sends them.
   */
  vary: (body: string, n: number) => string;
}

const AM_URL = '"externalURL":"http://alertmanager:9093"';
const varyAlertmanager = (body: string, n: number): string => body.replace(AM_URL, `"externalURL":"http://alertmanager-${n}:9093"`);

const NODES = 20;

export function oneAlert(): Payload {
  const body = alertmanagerBody([nodeNotReadyAlert('worker-7', 'resolved', `fp${MARK}`)]);
  return { name: '1 alert', path: '/v1/alertmanager', items: 1, template: JSON.stringify(body), vary: varyAlertmanager };
}

export function groupedAlerts(n = 50): Payload {
  const alerts = Array.from({ length: n }, (_, i) => nodeNotReadyAlert(`worker-${i % NODES}`, 'resolved', `fp${MARK}x${i}`));
  return {
    name: `${n} alerts grouped`,
    path: '/v1/alertmanager',
    items: n,
    template: JSON.stringify(alertmanagerBody(alerts)),
    vary: varyAlertmanager,
  };
}

export function rebootedEvent(): Payload {
  const ev = JSON.parse(readFileSync(new URL('../fixtures/events/node-rebooted.exporter.json', import.meta.url), 'utf8'));
  ev.metadata.uid = `1b7d3c52-6a0e-4f61-9a8e-${MARK}`;
  ev.message = `Node worker-1 has been rebooted, boot id: d87bdb0a-d2bc-42f7-945f-${MARK}`;
  ev.count = 1;
  return {
    name: 'k8s Event',
    path: '/v1/events',
    items: 1,
    template: JSON.stringify(ev),
    vary: (body, n) => body.replace('"count":1', `"count":${n + 2}`),
  };
}

export const fill = (p: Payload, n: number | string): string => p.template.replaceAll(MARK, String(n));
