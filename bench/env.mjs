/**
 * Bench settings read from the environment, shared by the benches that take them.
 */

/** The comma-separated corpus sizes in `process.env[name]`, or `fallback` when unset; a bad entry throws, naming it. */
export function sizesFromEnv(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  return raw.split(',').map((s) => {
    const n = Number(s.trim());
    if (!Number.isInteger(n) || n <= 0) throw new Error(`${name}: "${s}" is not a positive whole number`);
    return n;
  });
}
