// A SQLite file beside the session store for rows rewritten all the time (the fleet limiter, the agent catalog):
// WAL so readers never block writers, a busy wait instead of SQLITE_BUSY, no fsync per commit (each caller says
// why losing its last commits to a crash is harmless), and its schema created.
import Database from 'better-sqlite3';

export function openSqliteSideFile(path: string, schema: string): Database.Database {
  const db = new Database(path);
  try {
    db.pragma('busy_timeout = 10000');
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec(schema);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}
