import type Database from 'better-sqlite3';
import type { Scope } from '../../types.js';

/** Prepared statements by SQL text: each distinct statement is compiled once per connection. */
export class Statements {
  private readonly cache = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {}

  /** The prepared statement for `sql`, compiled on first use. */
  get(sql: string): Database.Statement {
    let statement = this.cache.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.cache.set(sql, statement);
    }
    return statement;
  }

  /** The rows of `table` in `scope` whose `id` is one of `ids`, in no set order. `table` is a fixed name, never user input. */
  rowsByIds<Row>(table: 'messages' | 'memories', scope: Scope, ids: readonly string[]): Row[] {
    const sql = `SELECT * FROM ${table} WHERE user_id = ? AND agent_id = ? AND id IN (SELECT value FROM json_each(?))`;
    return this.get(sql).all(scope.userId, scope.agentId, JSON.stringify(ids)) as Row[];
  }
}
