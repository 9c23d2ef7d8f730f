import type { Command } from 'commander';
import { explainOf, loggerOf, openExplained, print, progressLines } from '../context.js';

/** `cairn doctor`: where the data lives and what search can use, without changing anything; `--prepare` builds the embedder's cache (and so may create the data directory). */
export async function doctorCommand(opts: { json?: boolean; prepare?: boolean }, cmd: Command): Promise<void> {
  const explained = explainOf(cmd);
  const log = loggerOf(explained);
  const cairn = await openExplained(explained, { logger: log, backgroundEmbedding: false, onProgress: opts.prepare ? progressLines(log) : undefined, readOnly: !opts.prepare });
  try {
    if (opts.prepare) await cairn.prepareEmbedder();
    const d = await cairn.diagnose();
    if (opts.json) return print(JSON.stringify(d, null, 2));
    const yes = (b: boolean) => (b ? 'yes' : 'no');
    const wv = d.wordVectors;
    print(`cairn ${d.version}`);
    print(`store:          ${d.store.backend} at ${d.store.location} (schema ${d.store.schemaVersion})`);
    print(`search paths:   keyword ${yes(d.store.keywordSearch && cairn.config.search.keyword)}, vector ${yes(d.embedding.vectorSearch)}`);
    print(`embedding:      ${d.embedding.detail}`);
    if (d.embedding.embedderId) print(`embedder id:    ${d.embedding.embedderId} (${d.embedding.pending} row(s) waiting for a vector)`);
    if (d.embedding.lastError) print(`last error:     ${d.embedding.lastError}`);
    print(
      wv.installed
        ? `word vectors:   ${wv.package} ${wv.version} installed; cache ${wv.cacheBytes === null ? 'not built yet' : `built (${(wv.cacheBytes / 1e6).toFixed(0)} MB)`} at ${wv.cachePath}`
        : `word vectors:   not installed (optional package ${wv.package}); without an embedder search uses keywords only`,
    );
  } finally {
    await cairn.close();
  }
}
