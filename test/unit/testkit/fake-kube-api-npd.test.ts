import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FakeKubeApi, startFakeKubeApi } from '../../testkit/fake-kube-api.ts';
import { decodeKubeProtobuf } from '../../testkit/kube-protobuf.ts';

// What node-problem-detector's client needs of the fake API server (test/fixtures/npd/captured/
// */requests.json): its status patch merges conditions by type, as kube-apiserver's strategic merge
// patch does, so a monitor that patches only its own conditions keeps the others'; its Events come
// as protobuf.

const cond = (type: string, status: string, reason: string) => ({ type, status, reason, message: `${type} ${status}` });

describe("the fake API server, as node-problem-detector's client uses it", () => {
  let api: FakeKubeApi;
  beforeEach(async () => {
    api = await startFakeKubeApi();
    api.put({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'worker-3' }, status: { conditions: [cond('Ready', 'True', 'KubeletReady')] } });
  });
  afterEach(() => api.close());

  const patchStatus = (conditions: unknown[]): Promise<Response> =>
    fetch(`${api.url}/api/v1/nodes/worker-3/status`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/strategic-merge-patch+json' },
      body: JSON.stringify({ status: { conditions } }),
    });

  it('merges a strategic merge patch of status.conditions by type on the status subresource', async () => {
    expect((await patchStatus([cond('ReadonlyFilesystem', 'False', 'FilesystemIsNotReadOnly')])).status).toBe(200);
    expect((await patchStatus([cond('ReadonlyFilesystem', 'True', 'FilesystemIsReadOnly'), cond('XfsShutdown', 'False', 'XfsHasNotShutDown')])).status).toBe(
      200,
    );
    expect(api.get('v1', 'Node', 'worker-3')?.['status'].conditions).toEqual([
      cond('Ready', 'True', 'KubeletReady'),
      cond('ReadonlyFilesystem', 'True', 'FilesystemIsReadOnly'),
      cond('XfsShutdown', 'False', 'XfsHasNotShutDown'),
    ]);
  });

  it('still replaces a list on a JSON merge patch, as RFC 7386 does', async () => {
    const r = await fetch(`${api.url}/api/v1/nodes/worker-3/status`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ status: { conditions: [cond('ReadonlyFilesystem', 'True', 'FilesystemIsReadOnly')] } }),
    });
    expect(r.status).toBe(200);
    expect(api.get('v1', 'Node', 'worker-3')?.['status'].conditions).toEqual([cond('ReadonlyFilesystem', 'True', 'FilesystemIsReadOnly')]);
  });
});

describe("the fake API server's protobuf Events", () => {
  // A POST body NPD v0.8.20 sent (its readonly-monitor's FilesystemIsReadOnly), saved raw: test/fixtures/README.md.
  const body = Buffer.from(readFileSync(new URL('../../fixtures/npd/captured/readonly-monitor-event.protobuf.b64', import.meta.url), 'utf8'), 'base64');

  it('decodes the Event as the JSON kube-apiserver would store, empty omitempty fields left out', () => {
    const e = decodeKubeProtobuf(body);
    expect(e).toMatchObject({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: expect.stringMatching(/^worker-3\.[0-9a-f]+$/), namespace: 'default', creationTimestamp: null },
      involvedObject: { kind: 'Node', name: 'worker-3', uid: 'worker-3' },
      reason: 'FilesystemIsReadOnly',
      message: 'Node condition ReadonlyFilesystem is now: True, reason: FilesystemIsReadOnly, message: "EXT4-fs (dm-93): Remounting filesystem read-only"',
      source: { component: 'readonly-monitor', host: 'worker-3' },
      firstTimestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      count: 1,
      type: 'Warning',
      eventTime: null,
      reportingComponent: 'readonly-monitor',
      reportingInstance: 'worker-3',
    });
    expect(e['lastTimestamp']).toBe(e['firstTimestamp']);
    // proto2 sends every string; the server's JSON omits the empty omitempty ones (generateName, selfLink, apiVersion...).
    for (const part of ['metadata', 'involvedObject', 'source'] as const) expect(Object.values(e[part] as object)).not.toContain('');
  });

  it('stores a POSTed protobuf Event with its own creation time', async () => {
    const api = await startFakeKubeApi();
    try {
      const r = await fetch(`${api.url}/api/v1/namespaces/default/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/vnd.kubernetes.protobuf' },
        body,
      });
      expect(r.status).toBe(201);
      const [stored] = api.list('v1', 'Event');
      expect(stored?.['metadata']).toMatchObject({ namespace: 'default', creationTimestamp: expect.any(String), uid: expect.any(String) });
      expect(stored?.['reason']).toBe('FilesystemIsReadOnly');
    } finally {
      await api.close();
    }
  });
});
