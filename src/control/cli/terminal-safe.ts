// What the CLI prints comes from the API: job summaries, refusal reasons, failure messages and
// the output of commands run on hosts, any of which an attacker (or a broken device) may have
// shaped. A terminal obeys escape sequences in that text: retitle the window, rewrite earlier
// lines, hide text, or (on some terminals) answer back into the shell. So every line the CLI
// prints loses its control characters first: C0 (ESC, CR, BEL, backspace...) except newline and
// tab, DEL, C1 (U+0080-U+009F, whose CSI U+009B starts a sequence without ESC), and the Unicode
// bidirectional overrides, which reorder what is shown without changing what is there.

const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

export const terminalSafe = (s: string): string => s.replace(UNSAFE, '');
