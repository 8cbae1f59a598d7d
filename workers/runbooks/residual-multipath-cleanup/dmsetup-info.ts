// Parses `dmsetup info -c` (the column report: `Name Maj Min Stat Open Targ Event UUID`), read by
// header name so an added or reordered column does not shift values. `No devices found` is an
// empty list. The UUID column is empty for devices without one.

export interface DmInfo {
  name: string;
  major: number;
  minor: number;
  /** Number of opens of the device (the kernel's open count), the `Open` column. */
  open: number;
  uuid: string | null;
}

export function parseDmsetupInfoColumns(stdout: string): DmInfo[] {
  const lines = stdout
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l.trim() !== '');
  const header = lines[0]?.trim().split(/\s+/) ?? [];
  if (header[0] !== 'Name') return [];
  const col = (name: string): number => header.indexOf(name);
  const [iName, iMaj, iMin, iOpen, iUuid] = [col('Name'), col('Maj'), col('Min'), col('Open'), col('UUID')];
  if (iMaj < 0 || iMin < 0 || iOpen < 0) throw new Error(`dmsetup info -c: unexpected header ${JSON.stringify(lines[0])}`);
  const out: DmInfo[] = [];
  for (const line of lines.slice(1)) {
    const f = line.trim().split(/\s+/);
    const num = (i: number): number => Number(f[i]);
    const info: DmInfo = {
      name: f[iName] ?? '',
      major: num(iMaj),
      minor: num(iMin),
      open: num(iOpen),
      uuid: (iUuid >= 0 ? f[iUuid] : undefined) ?? null,
    };
    if (!info.name || ![info.major, info.minor, info.open].every(Number.isInteger)) {
      throw new Error(`dmsetup info -c: cannot read row ${JSON.stringify(line)}`);
    }
    out.push(info);
  }
  return out;
}
