// An argv element as a POSIX shell would need it to mean the same: for showing the commands a
// step runs or would run, in the console and the CLI. Display only: nothing here runs a shell.
export const shellQuote = (a: string): string => (/^[A-Za-z0-9_./:=@%+,-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`);
export const shellLine = (argv: readonly string[]): string => argv.map(shellQuote).join(' ');
