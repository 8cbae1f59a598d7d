import type { V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import type { CoreApi } from './apis.ts';
import type { PersistentVolumeClaimInfo, PersistentVolumeInfo } from '../lookups.ts';
import { isNotFound } from './not-found.ts';

// PersistentVolumes and their claims. A Local PV names its node only through nodeAffinity; we
// take it when the affinity allows exactly one host, and leave it unset otherwise (triage then
// needs the node from the signal).

const HOSTNAME_KEYS = new Set(['kubernetes.io/hostname']);
const WWN_ATTRIBUTE = /^(wwn|wwid|lun[-_]?wwn|naa|serial|lun[-_]?serial)$/i;

function singleNode(pv: V1PersistentVolume): string | undefined {
  const terms = pv.spec?.nodeAffinity?.required?.nodeSelectorTerms ?? [];
  if (terms.length !== 1) return undefined;
  const t = terms[0]!;
  const exprs = [...(t.matchExpressions ?? []).filter((e) => HOSTNAME_KEYS.has(e.key)), ...(t.matchFields ?? []).filter((f) => f.key === 'metadata.name')];
  if (exprs.length !== 1) return undefined;
  const e = exprs[0]!;
  return e.operator === 'In' && e.values?.length === 1 ? e.values[0] : undefined;
}

export function persistentVolumeInfo(pv: V1PersistentVolume): PersistentVolumeInfo {
  const spec = pv.spec ?? {};
  const claim = spec.claimRef?.name && spec.claimRef.namespace ? { namespace: spec.claimRef.namespace, name: spec.claimRef.name } : undefined;
  const attributes = { ...(spec.csi?.volumeAttributes ?? {}) };
  const node = spec.local ? singleNode(pv) : undefined;
  const rbd =
    spec.rbd?.pool !== undefined || spec.rbd?.image
      ? { pool: spec.rbd.pool ?? 'rbd', image: spec.rbd.image }
      : attributes['pool'] && attributes['imageName']
        ? { pool: attributes['pool'], image: attributes['imageName'] }
        : undefined;
  const wwn = spec.fc?.wwids?.[0] ?? Object.entries(attributes).find(([k]) => WWN_ATTRIBUTE.test(k))?.[1];
  return {
    name: pv.metadata?.name ?? '',
    volumeMode: spec.volumeMode === 'Block' ? 'Block' : 'Filesystem',
    ...(spec.local ? { local: { path: spec.local.path, ...(node ? { node } : {}) } } : {}),
    ...(claim ? { claim } : {}),
    ...(pv.metadata?.uid ? { uid: pv.metadata.uid } : {}),
    ...(pv.status?.phase ? { phase: pv.status.phase } : {}),
    accessModes: [...(spec.accessModes ?? [])],
    ...(spec.csi ? { csi: { driver: spec.csi.driver, volumeHandle: spec.csi.volumeHandle, attributes } } : {}),
    ...(rbd ? { rbd } : {}),
    ...(wwn ? { wwn } : {}),
    ...(spec.csi?.readOnly || spec.mountOptions?.includes('ro') ? { readOnly: true } : {}),
  };
}

export function claimInfo(c: V1PersistentVolumeClaim): PersistentVolumeClaimInfo {
  return {
    namespace: c.metadata?.namespace ?? '',
    name: c.metadata?.name ?? '',
    ...(c.metadata?.uid ? { uid: c.metadata.uid } : {}),
    ...(c.spec?.volumeName ? { volumeName: c.spec.volumeName } : {}),
    accessModes: [...(c.spec?.accessModes ?? [])],
    ...(c.status?.phase ? { phase: c.status.phase } : {}),
  };
}

export async function readPersistentVolume(core: CoreApi, name: string): Promise<PersistentVolumeInfo | undefined> {
  try {
    return persistentVolumeInfo(await core.readPersistentVolume({ name }));
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** PVs have no field selector on spec.local.path: list and filter (PV counts are modest). */
export async function findLocalPersistentVolume(core: CoreApi, path: string, node?: string): Promise<PersistentVolumeInfo | undefined> {
  const list = await core.listPersistentVolume({});
  for (const pv of list.items) {
    if (pv.spec?.local?.path !== path) continue;
    const info = persistentVolumeInfo(pv);
    if (node === undefined || info.local?.node === undefined || info.local.node === node) return info;
  }
  return undefined;
}

export async function readClaimOfVolume(core: CoreApi, pvName: string): Promise<PersistentVolumeClaimInfo | undefined> {
  const pv = await readPersistentVolume(core, pvName);
  if (!pv?.claim) return undefined;
  try {
    const claim = claimInfo(await core.readNamespacedPersistentVolumeClaim(pv.claim));
    // A claimRef can outlive its claim (Released PV, or a new PVC with the same name bound elsewhere).
    return claim.volumeName === undefined || claim.volumeName === pvName ? claim : undefined;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export async function listPersistentVolumes(core: CoreApi): Promise<PersistentVolumeInfo[]> {
  return (await core.listPersistentVolume({})).items.map(persistentVolumeInfo);
}
