// Small payload builders for integration tests. The captured real payloads live in
// test/fixtures; these only vary the fields a test is about.

export function nodeNotReadyAlert(node: string, status: 'firing' | 'resolved', fingerprint = `fp${node.replace(/[^a-z0-9]/g, '')}`) {
  return {
    status,
    labels: { alertname: 'KubeNodeNotReady', node, severity: 'warning', condition: 'Ready', job: 'kube-state-metrics' },
    annotations: { summary: 'Node is not ready.', description: `${node} has been unready for more than 15 minutes.` },
    startsAt: '2026-12-01T03:12:44.512Z',
    endsAt: status === 'resolved' ? '2026-12-01T03:41:14.512Z' : '0001-01-01T00:00:00Z',
    generatorURL: 'http://prometheus:9090/graph?g0.expr=kube_node_status_condition',
    fingerprint,
  };
}

export function alertmanagerBody(alerts: ReturnType<typeof nodeNotReadyAlert>[]) {
  return {
    version: '4',
    groupKey: '{}:{alertname="KubeNodeNotReady"}',
    truncatedAlerts: 0,
    status: alerts.some((a) => a.status === 'firing') ? 'firing' : 'resolved',
    receiver: 'volume-medic',
    groupLabels: { alertname: 'KubeNodeNotReady' },
    commonLabels: { alertname: 'KubeNodeNotReady' },
    commonAnnotations: {},
    externalURL: 'http://alertmanager:9093',
    alerts,
  };
}

export async function post(url: string, body: unknown, token?: string, raw?: string): Promise<{ status: number; json: any; headers: Headers }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: raw ?? JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, json, headers: res.headers };
}

/** GET a JSON answer; tests assert its shape, so it is typed loosely on purpose. */
export async function getJson(url: string, token?: string): Promise<any> {
  const res = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return res.json();
}
