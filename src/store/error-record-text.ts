import type { ErrorRecord } from './store.js';

/**
 * The text an error record is searched and embedded by: tool, keywords, symptom, cause and the fix. Every
 * backend indexes this text and checks a saved vector against it, so a refreshed record is re-embedded.
 */
export function errorRecordText(record: Pick<ErrorRecord, 'toolName' | 'keywords' | 'symptom' | 'cause' | 'action'>): string {
  return [record.toolName, record.keywords.join(' '), record.symptom, record.cause ?? '', record.action].filter((s) => s !== '').join('\n');
}
