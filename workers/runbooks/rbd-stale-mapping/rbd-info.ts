import { z } from '../../../src/core/zod.ts';

// `rbd info <pool>/<image>` -> which RADOS object carries the image's watches. Format 2 images
// (every image since Jewel) keep them on `rbd_header.<id>`, where <id> is what follows
// `rbd_data.` in block_name_prefix; format 1 images on `<image>.rbd`.

export interface RbdImageInfo {
  name: string;
  id: string | null;
  format: 1 | 2;
  blockNamePrefix: string;
  /** The object whose watchers are the image's users. */
  headerObject: string;
}

const InfoJson = z.object({
  name: z.string(),
  id: z.optional(z.string()),
  block_name_prefix: z.string(),
  format: z.union([z.literal(1), z.literal(2)]),
});

const ID = /^[0-9a-f]{1,64}$/;

function headerOf(name: string, format: 1 | 2, prefix: string): { id: string | null; headerObject: string } {
  if (format === 1) return { id: null, headerObject: `${name}.rbd` };
  const id = prefix.startsWith('rbd_data.') ? prefix.slice('rbd_data.'.length) : '';
  if (!ID.test(id)) throw new Error(`block_name_prefix ${JSON.stringify(prefix)} does not name an image id`);
  return { id, headerObject: `rbd_header.${id}` };
}

export function parseRbdInfoJson(stdout: string): RbdImageInfo {
  const j = InfoJson.parse(JSON.parse(stdout));
  return { name: j.name, format: j.format, blockNamePrefix: j.block_name_prefix, ...headerOf(j.name, j.format, j.block_name_prefix) };
}

/** The text form: `rbd image 'img1':` then tab-indented `key: value` lines. */
export function parseRbdInfoText(stdout: string): RbdImageInfo {
  const name = /^rbd image '([^']+)':/m.exec(stdout)?.[1];
  const prefix = /^\s+block_name_prefix: (\S+)$/m.exec(stdout)?.[1];
  const format = Number(/^\s+format: ([12])$/m.exec(stdout)?.[1]);
  if (!name || !prefix || (format !== 1 && format !== 2)) throw new Error('rbd info: no image name, block_name_prefix or format in the output');
  return { name, format, blockNamePrefix: prefix, ...headerOf(name, format, prefix) };
}

/** `rbd: error opening image x: (2) No such file or directory` (also for a missing pool). */
export const isNoSuchImage = (stderr: string): boolean => /error opening (image|pool) .*\(2\) No such file or directory/.test(stderr);
