// A strategic merge patch as kube-apiserver applies it, for the lists the fake's clients patch by
// key: a list whose Go field carries `patchMergeKey` is merged item by item on that key (an item the
// patch names is merged into the one with the same key, a new key is appended); every other list is
// replaced; null deletes a field. node-problem-detector patches `status.conditions` this way
// (`{"status":{"conditions":[...]}}`, merge key `type`), one condition at a time or all of them.
// Directives (`$patch`, `$retainKeys`, `$setElementOrder`) are not understood.

type Obj = Record<string, unknown>;

/** Field name -> merge key, from k8s.io/api core/v1 (NodeStatus.conditions, PodStatus.conditions). */
const MERGE_KEYS: Readonly<Record<string, string>> = { conditions: 'type' };

const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);

export function strategicMergePatch(target: Obj, patch: Obj): void {
  for (const [k, v] of Object.entries(patch)) {
    const mergeKey = MERGE_KEYS[k];
    const current = target[k];
    if (v === null) delete target[k];
    else if (isObj(v) && isObj(current)) strategicMergePatch(current, v);
    else if (mergeKey && Array.isArray(v) && Array.isArray(current)) target[k] = mergeList(current, v, mergeKey);
    else target[k] = v;
  }
}

function mergeList(current: unknown[], patch: unknown[], mergeKey: string): unknown[] {
  const out = [...current];
  for (const item of patch) {
    const at = isObj(item) ? out.findIndex((o) => isObj(o) && o[mergeKey] === item[mergeKey]) : -1;
    const existing = at >= 0 ? out[at] : undefined;
    if (isObj(existing) && isObj(item)) strategicMergePatch(existing, item);
    else out.push(item);
  }
  return out;
}
