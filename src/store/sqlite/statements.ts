import type Database from 'better-sqlite3';

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
}
