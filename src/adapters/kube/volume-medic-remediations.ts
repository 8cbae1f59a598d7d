import { CustomObjectsApi, type KubeConfig, type KubernetesListObject, type KubernetesObject } from '@kubernetes/client-node';
import { isNotFound } from './api/not-found.ts';

// The VolumeMedicRemediation objects (deploy/charts/volume-medic/templates/crd-volumemedicremediations.yaml)
// as the receiver reads and writes them: a cluster-wide list for its informer, and its status
// subresource. A status write names the object's uid in a JSON patch `test` op, so a status meant
// for one object never lands on another of the same name made since (the API server answers 422).

const REMEDIATION_GROUP = 'volume-medic.io';
const REMEDIATION_VERSION = 'v1alpha1';
const REMEDIATION_PLURAL = 'volumemedicremediations';
/** The informer's collection path (cluster-wide: NHC makes them in its template's namespace, any). */
export const REMEDIATIONS_PATH = `/apis/${REMEDIATION_GROUP}/${REMEDIATION_VERSION}/${REMEDIATION_PLURAL}`;

export interface RemediationRef {
  namespace: string;
  name: string;
  uid: string;
}

export interface RemediationsApi {
  list(): Promise<KubernetesListObject<KubernetesObject>>;
  /** Replaces the object's status; false when the object is gone. */
  writeStatus(ref: RemediationRef, status: object): Promise<boolean>;
}

export function remediationsApi(kubeConfig: KubeConfig): RemediationsApi {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const at = { group: REMEDIATION_GROUP, version: REMEDIATION_VERSION, plural: REMEDIATION_PLURAL };
  return {
    list: async () => (await api.listClusterCustomObject(at)) as KubernetesListObject<KubernetesObject>,
    async writeStatus(ref, status) {
      try {
        await api.patchNamespacedCustomObjectStatus({
          ...at,
          namespace: ref.namespace,
          name: ref.name,
          body: [
            { op: 'test', path: '/metadata/uid', value: ref.uid },
            { op: 'add', path: '/status', value: status },
          ],
        });
        return true;
      } catch (err) {
        // A 422 (a newer object of that name, or a status the CRD's schema refuses) is the caller's to see.
        if (isNotFound(err)) return false;
        throw err;
      }
    },
  };
}
