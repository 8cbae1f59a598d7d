import { z } from '../../zod.ts';
import { list } from '../env-text.ts';
import { section, setting } from '../setting.ts';
import { Cidrs } from '../types.ts';

const RECEIVER = ['receiver'] as const;
const Seconds = () => z.coerce.number().check(z.int(), z.gte(0), z.lte(600));
const Header = () => z.string().check(z.regex(/^[A-Za-z0-9-]{1,64}$/, 'an HTTP header name'));

export const receiverOperators = section({
  title: 'Receiver: operator identity',
  doc: 'Who may set modes, pause, trip and reset breakers, approve, release placeholders, read jobs and open the /ui dashboard. The webhook token never opens an operator route.',
  settings: {
    operatorAuth: setting({
      env: 'OPERATOR_AUTH',
      readers: RECEIVER,
      type: () => z._default(z.enum(['kubernetes', 'off', 'insecure']), 'kubernetes'),
      doc: 'How operators are identified. `kubernetes`: a Kubernetes bearer token, checked with TokenReview and authorised with SubjectAccessReview on the volume-medic.io verbs (README, "Operator identity"), through the pod\'s service account or a kubeconfig, as KUBE_WATCH; without Kubernetes access every operator route answers 503 saying so. `off`: operator routes answer 403. `insecure`: anyone reaching the port is operator `insecure-anonymous` with every verb; only with ALLOW_UNAUTHENTICATED=true (local trials).',
    }),
    operatorTokenAudiences: setting({
      env: 'OPERATOR_TOKEN_AUDIENCES',
      readers: RECEIVER,
      type: () => z._default(z.array(z.string().check(z.minLength(1))), []),
      read: list,
      doc: "Audiences an operator token must be meant for (TokenReview spec.audiences); none: the API server's own, as `kubectl create token` gives.",
    }),
    operatorTokenCacheSeconds: setting({
      env: 'OPERATOR_TOKEN_CACHE_SECONDS',
      readers: RECEIVER,
      type: () => z._default(Seconds(), 30),
      doc: 'How long an accepted token is remembered (by its SHA-256) before it is reviewed again. 0: every request.',
    }),
    operatorAccessCacheSeconds: setting({
      env: 'OPERATOR_ACCESS_CACHE_SECONDS',
      readers: RECEIVER,
      type: () => z._default(Seconds(), 10),
      doc: 'How long a SubjectAccessReview answer (allowed or not) is remembered. 0: every request.',
    }),
    authProxyCidrs: setting({
      env: 'AUTH_PROXY_CIDRS',
      readers: RECEIVER,
      type: () => z._default(Cidrs('10.0.0.0/8'), []),
      read: list,
      doc: "TCP peers (an oauth2-proxy style auth proxy) whose AUTH_PROXY_USER_HEADER and AUTH_PROXY_GROUPS_HEADER are believed as the operator's identity (still authorised with SubjectAccessReview). From any other address those headers are ignored. The proxy must overwrite them on every request.",
    }),
    authProxyUserHeader: setting({
      env: 'AUTH_PROXY_USER_HEADER',
      readers: RECEIVER,
      type: () => z._default(Header(), 'X-Forwarded-User'),
      doc: "The auth proxy's user header.",
    }),
    authProxyGroupsHeader: setting({
      env: 'AUTH_PROXY_GROUPS_HEADER',
      readers: RECEIVER,
      type: () => z._default(Header(), 'X-Forwarded-Groups'),
      doc: "The auth proxy's groups header (comma-separated groups).",
    }),
  },
});
