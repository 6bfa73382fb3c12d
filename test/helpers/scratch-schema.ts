// A PostgreSQL schema of its own for one test file, on the test run's server: a URL whose connections use
// it (search_path), and a drop that removes it with everything in it.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';

export interface ScratchSchema {
  readonly url: string;
  /** A connection of the test's own (its search_path is not set: qualify or SET it). */
  readonly admin: pg.Client;
  readonly name: string;
  drop(): Promise<void>;
}

export async function scratchSchema(): Promise<ScratchSchema> {
  const name = `dh_test_${randomUUID().replaceAll('-', '')}`;
  const admin = new pg.Client({ connectionString: inject('postgresUrl') });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${name}`);
  const url = new URL(inject('postgresUrl'));
  url.searchParams.set('options', `-c search_path=${name}`);
  return {
    url: url.toString(),
    admin,
    name,
    drop: async () => {
      await admin.query(`DROP SCHEMA ${name} CASCADE`);
      await admin.end();
    },
  };
}
