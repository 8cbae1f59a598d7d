import { lookupsFromObjects } from '../../../../../src/adapters/kube/api/objects-to-lookups.ts';
import { CLUSTER_FIXTURE, lookupsContract } from '../../../../support/lookups-contract.ts';

const lookups = lookupsFromObjects(CLUSTER_FIXTURE.items);
lookupsContract('in memory, from fixture objects', () => lookups);
