// DSSE envelopes (https://github.com/secure-systems-lab/dsse), the signed wrapper of in-toto
// statements that `cosign attest` writes and `cosign verify-attestation` reads: the signature
// is ECDSA-SHA256 over the pre-authentication encoding (PAE) of payload type and payload.
import { type KeyObject, sign, verify } from 'node:crypto';
import { z } from 'zod';

export const IN_TOTO = 'application/vnd.in-toto+json';
export const DSSE_MEDIA = 'application/vnd.dsse.envelope.v1+json';

export const Envelope = z.object({
  payloadType: z.string(),
  payload: z.string(),
  signatures: z.array(z.object({ keyid: z.string().optional(), sig: z.string() })).min(1),
});
export type Envelope = z.infer<typeof Envelope>;

const pae = (type: string, body: Buffer) => Buffer.concat([Buffer.from(`DSSEv1 ${Buffer.byteLength(type)} ${type} ${body.length} `), body]);

export function signEnvelope(statement: unknown, key: KeyObject): Envelope {
  const body = Buffer.from(JSON.stringify(statement));
  return {
    payloadType: IN_TOTO,
    payload: body.toString('base64'),
    signatures: [{ keyid: '', sig: sign('sha256', pae(IN_TOTO, body), key).toString('base64') }],
  };
}

/** The statement inside, when one of the envelope's signatures is by `key`; else undefined. */
export function openEnvelope(raw: unknown, key: KeyObject): unknown {
  const e = Envelope.parse(raw);
  const body = Buffer.from(e.payload, 'base64');
  const ok = e.signatures.some((s) => verify('sha256', pae(e.payloadType, body), key, Buffer.from(s.sig, 'base64')));
  return ok && e.payloadType === IN_TOTO ? JSON.parse(body.toString('utf8')) : undefined;
}
