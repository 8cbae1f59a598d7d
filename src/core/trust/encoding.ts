// The bytes a seal covers. A sealed value travels as JSON (BullMQ stores job data with
// JSON.stringify; control records are JSON strings), and the verifier gets back JSON.parse of
// that text. JSON.stringify of the parsed value reproduces the text byte for byte: properties
// keep their order (integer-like keys first, in ascending order, on both sides: V8 orders any
// object's own keys that way), undefined members and functions were already dropped, NaN and
// Infinity already null, lone surrogates escaped the same way again (test/unit/core/trust/seal.test.ts
// checks this on arbitrary JSON values). So the encoding the issuer stores is the one the
// verifier recomputes, without sorting keys: a third of the cost of a key-sorting canonical
// form on the receiver's hot path (bench/README.md, "Figures behind the code"). A value
// re-encoded by anything else (other key order) no longer verifies: refused, never trusted.

export const sealedBytes = (value: unknown): string => JSON.stringify(value) ?? 'null';
