import type { Schema } from './structural-schema.ts';

// Sigstore policy-controller's ClusterImagePolicy (policy.sigstore.dev/v1beta1), written here from
// its documentation (https://docs.sigstore.dev/policy-controller/overview/, "Configuring
// policy-controller ClusterImagePolicy"): no models package carries it. It states what the
// documentation states: the fields of spec and their types, `glob` required for each image,
// `name` for each authority, and the enums the docs list. Fields the docs do not describe are
// refused (no additionalProperties), so a misspelt field in the chart's policy fails its test instead of being pruned
// silently by the API server.

const str: Schema = { type: 'string' };
const bool: Schema = { type: 'boolean' };
const obj = (properties: Record<string, Schema>, required?: string[]): Schema => ({
  type: 'object',
  properties,
  ...(required ? { required } : {}),
});
const list = (items: Schema): Schema => ({ type: 'array', items });
/** An object the documentation leaves open (a label selector, a policy's free form). */
const open: Schema = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };

const trustRooted = obj({ url: str, trustRootRef: str });

const authority = obj(
  {
    name: str,
    key: obj({ data: str, kms: str, secretRef: obj({ name: str }), hashAlgorithm: { type: 'string', enum: ['sha224', 'sha256', 'sha384', 'sha512'] } }),
    keyless: obj({
      url: str,
      trustRootRef: str,
      'ca-cert': obj({ data: str, kms: str, secretRef: obj({ name: str }) }),
      identities: list(obj({ issuer: str, subject: str, issuerRegExp: str, subjectRegExp: str })),
      insecureIgnoreSCT: bool,
    }),
    static: obj({ action: { type: 'string', enum: ['pass', 'fail'] }, message: str }, ['action']),
    source: list(obj({ oci: str, signaturePullSecrets: list(obj({ name: str })), tagPrefix: str })),
    ctlog: trustRooted,
    rfc3161timestamp: obj({ trustRootRef: str }),
    attestations: list(
      obj({
        name: str,
        predicateType: str,
        policy: obj({
          type: { type: 'string', enum: ['cue', 'rego'] },
          data: str,
          url: str,
          configMapRef: obj({ name: str, key: str }),
          fetchConfigFile: bool,
          includeSpec: bool,
          includeObjectMeta: bool,
          includeTypeMeta: bool,
          remote: obj({ url: str, sha256sum: str }),
        }),
      }),
    ),
    signatureFormat: str,
  },
  ['name'],
);

/** The CustomResourceDefinition's shape crdValidator reads: one served version with its schema. */
export const CLUSTER_IMAGE_POLICY_CRD = {
  spec: {
    versions: [
      {
        name: 'v1beta1',
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              apiVersion: str,
              kind: str,
              metadata: open,
              spec: obj(
                {
                  images: list(obj({ glob: str }, ['glob'])),
                  authorities: list(authority),
                  mode: { type: 'string', enum: ['enforce', 'warn'] },
                  match: list(obj({ group: str, version: str, resource: str, selector: open })),
                  policy: open,
                },
                ['images'],
              ),
            },
            required: ['spec'],
          },
        },
      },
    ],
  },
};
