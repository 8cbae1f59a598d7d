import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';

// One namespaced custom resource, written the way the API server expects of a controller that owns
// its objects: create (409: someone made it already, an answer), merge-patch of the /status
// subresource (a CRD with `subresources.status` ignores status on create and on writes to the
// main resource), delete (404: gone already, an answer), and a paged list by label whose continue
// token may expire (410: listed again from the start, once). Objects come back as loose JSON:
// the caller reads what it needs field by field.

export interface CustomResource {
  group: string;
  version: string;
  plural: string;
  namespace: string;
}

type Loose = Record<string, unknown>;
const code = (err: unknown): number | undefined => (err as { code?: unknown } | null)?.code as number | undefined;

/** Items listed per request. */
const PAGE = 500;

export class CustomRecords {
  readonly #api: CustomObjectsApi;
  readonly #r: CustomResource;

  constructor(kubeConfig: KubeConfig, resource: CustomResource) {
    this.#api = kubeConfig.makeApiClient(CustomObjectsApi);
    this.#r = resource;
  }

  /** Every object with these labels, in pages. */
  async list(labelSelector: string): Promise<Loose[]> {
    try {
      return await this.#listAll(labelSelector);
    } catch (err) {
      // The continue token expired between two pages: a consistent list needs a fresh start.
      if (code(err) !== 410) throw err;
      return this.#listAll(labelSelector);
    }
  }

  async #listAll(labelSelector: string): Promise<Loose[]> {
    const out: Loose[] = [];
    let token: string | undefined;
    do {
      const page = (await this.#api.listNamespacedCustomObject({
        ...this.#r,
        labelSelector,
        limit: PAGE,
        ...(token ? { _continue: token } : {}),
      })) as { items?: Loose[]; metadata?: { _continue?: string; continue?: string } };
      out.push(...(page.items ?? []));
      token = page.metadata?._continue ?? page.metadata?.continue;
    } while (token);
    return out;
  }

  /** Creates `body`; false when an object of that name exists already (409). */
  async create(body: Loose): Promise<boolean> {
    try {
      await this.#api.createNamespacedCustomObject({ ...this.#r, body });
      return true;
    } catch (err) {
      if (code(err) === 409) return false;
      throw err;
    }
  }

  /** Merge-patches the status subresource; false when the object is gone (404). */
  async patchStatus(name: string, status: Loose): Promise<boolean> {
    try {
      await this.#api.patchNamespacedCustomObjectStatus({ ...this.#r, name, body: { status } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
      return true;
    } catch (err) {
      if (code(err) === 404) return false;
      throw err;
    }
  }

  /** Deletes the object; a 404 (gone already) is the same answer. */
  async remove(name: string): Promise<void> {
    try {
      await this.#api.deleteNamespacedCustomObject({ ...this.#r, name });
    } catch (err) {
      if (code(err) !== 404) throw err;
    }
  }
}
