import { posix } from 'node:path';
import { isObjectName } from '../../../src/core/catalogue/names.ts';
import type { Host } from '../../host/host.ts';
import { realHostPath } from '../../host/real-path.ts';
import type { PlaceholderStore } from './record-store.ts';

// The placeholder's backing image is created, attached with losetup and deleted: it must be the
// file we made, in `<STATE_DIR>/placeholders/`, and nowhere else. A record on disk is input (it
// could have been edited to name /etc/shadow or a customer's volume image), and a directory on
// the way could have been swapped for a symlink. So, before any losetup or rm of an image:
//   - the path is a store image path, `<dir>/<pv>.img` (lexically: no `..`, no other directory);
//     the plan also checks it is this PV's (a record naming another PV's image is refused);
//   - its parent, with every symlink resolved, is the real STATE_DIR's `placeholders` directory
//     (the directory itself is not a link out);
//   - the image itself, when it exists, is a regular file, not a symlink to one elsewhere.

/** Why the image may not be touched, or null when it may. */
export async function imageOutsideStateDir(host: Host, store: PlaceholderStore, image: string): Promise<string | null> {
  const name = posix.basename(image);
  const pv = name.endsWith('.img') ? name.slice(0, -'.img'.length) : '';
  if (!isObjectName(pv) || image !== store.imagePath(pv)) return `the image ${image} is not a placeholder image in ${store.dir}`;
  const realParent = await realHostPath(host, posix.dirname(image));
  const realDir = posix.join(await realHostPath(host, store.stateDir), posix.basename(store.dir));
  if (realParent !== realDir) return `the directory of ${image} resolves to ${realParent}, outside ${realDir}`;
  const info = await host.lstat(image);
  if (info && info.type !== 'file') return `${image} is a ${info.type}, not the regular file we create`;
  return null;
}
