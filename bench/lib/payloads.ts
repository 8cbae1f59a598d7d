import { readFileSync } from 'node:fs';
import { alertmanagerBody, nodeNotReadyAlert } from '../../test/support/payloads.ts';

// Request bodies for the benchmarks. A unique body differs only in the incident's identity (the
// alert fingerprint, the event's uid and boot id), so every request makes new jobs; bodies are
// made by replacing a marker in a pre-serialised template, so the load generator spends almost
// nothing building them.

export const MARK = '__N__';

export interface Payload {
  name: string;
  path: string;
  /** Jobs (alerts or events) each request carries. */
  items: number;
  template: string;
}

export const NODES = 20;

export function oneAlert(): Payload {
  const body = alertmanagerBody([nodeNotReadyAlert('worker-7', 'resolved', `fp${MARK}`)]);
  return { name: '1 alert', path: '/v1/alertmanager', items: 1, template: JSON.stringify(body) };
}

export function groupedAlerts(n = 50): Payload {
  const alerts = Array.from({ length: n }, (_, i) => nodeNotReadyAlert(`worker-${i % NODES}`, 'resolved', `fp${MARK}x${i}`));
  return { name: `${n} alerts grouped`, path: '/v1/alertmanager', items: n, template: JSON.stringify(alertmanagerBody(alerts)) };
}

export function rebootedEvent(): Payload {
  const ev = JSON.parse(readFileSync(new URL('../../test/fixtures/events/node-rebooted.exporter.json', import.meta.url), 'utf8'));
  ev.metadata.uid = `1b7d3c52-6a0e-4f61-9a8e-${MARK}`;
  ev.message = `Node worker-1 has been rebooted, boot id: d87bdb0a-d2bc-42f7-945f-${MARK}`;
  return { name: 'k8s Event', path: '/v1/events', items: 1, template: JSON.stringify(ev) };
}

export const fill = (p: Payload, n: number | string): string => p.template.replaceAll(MARK, String(n));
