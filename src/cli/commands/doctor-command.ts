import type { Command } from 'commander';
import { diagnoseUnopened, type Cairn, type Diagnosis } from '../../cairn.js';
import { CairnError, describeError, isCairnError } from '../../errors.js';
import { explainOf, loggerOf, openExplained, print, progressLines } from '../context.js';

/**
 * `cairn doctor`: where the data lives and what search can use, without changing anything; `--prepare`
 * builds the embedder's cache (and so may create the data directory). A store that cannot be opened (an
 * unreachable PostgreSQL) is one failed check: the others are still reported, then the command exits 1.
 */
export async function doctorCommand(opts: { json?: boolean; prepare?: boolean }, cmd: Command): Promise<void> {
  const explained = explainOf(cmd);
  const log = loggerOf(explained);
  let cairn: Cairn;
  try {
    cairn = await openExplained(explained, { logger: log, backgroundEmbedding: false, onProgress: opts.prepare ? progressLines(log) : undefined, readOnly: !opts.prepare });
  } catch (err) {
    // A data directory that does not exist (or a config that cannot work) is a usage error, not a check.
    if (isCairnError(err, 'config_invalid') || isCairnError(err, 'invalid_input')) throw err;
    const reason = isCairnError(err) ? err.message : describeError(err);
    const d = diagnoseUnopened(explained.config, reason);
    if (opts.json) print(JSON.stringify(d, null, 2));
    else {
      print(`cairn ${d.version}`);
      print(`store:          ${d.store.backend}: FAILED: ${reason}`);
      print('search paths:   not checked (the store is not open)');
      print(`embedding:      provider ${d.embedding.provider} (not checked: the store is not open)`);
      print(wordVectorsLine(d.wordVectors));
    }
    throw new CairnError(isCairnError(err) ? err.code : 'unavailable', `doctor: the store check failed: ${reason}`, { cause: err });
  }
  try {
    if (opts.prepare) await cairn.prepareEmbedder();
    const d = await cairn.health.diagnose();
    if (opts.json) return print(JSON.stringify(d, null, 2));
    const yes = (b: boolean) => (b ? 'yes' : 'no');
    print(`cairn ${d.version}`);
    print(`store:          ${d.store.backend} at ${d.store.location} (schema ${d.store.schemaVersion})`);
    print(`search paths:   keyword ${yes(d.store.keywordSearch && cairn.config.search.keyword)}, vector ${yes(d.embedding.vectorSearch)}`);
    print(`embedding:      ${d.embedding.detail}`);
    if (d.embedding.embedderId) print(`embedder id:    ${d.embedding.embedderId} (${d.embedding.pending} row(s) waiting for a vector)`);
    if (d.embedding.lastError) print(`last error:     ${d.embedding.lastError}`);
    print(wordVectorsLine(d.wordVectors));
  } finally {
    await cairn.close();
  }
}

function wordVectorsLine(wv: Diagnosis['wordVectors']): string {
  return wv.installed
    ? `word vectors:   ${wv.package} ${wv.version} installed; cache ${wv.cacheBytes === null ? 'not built yet' : `built (${(wv.cacheBytes / 1e6).toFixed(0)} MB)`} at ${wv.cachePath}`
    : `word vectors:   not installed (optional package ${wv.package}); without an embedder search uses keywords only`;
}
