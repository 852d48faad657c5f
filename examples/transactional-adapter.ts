// An adapter of your own for transactional tools: here a new node-postgres
// Client per attempt (for a database behind a transaction-pooling proxy, or a
// function with no pool), but the shape fits any driver that can begin,
// query and commit on one connection.
import pg from 'pg';
import { transactionalDatabase, type Rows, type TransactionalDriver } from 'bullmq-tool-receipts/transactional';

export function clientPerAttempt(connectionString: string): TransactionalDriver<pg.Client> {
  const connect = async () => {
    const client = new pg.Client({ connectionString });
    // A dropped connection must fail the query in flight, not crash the process.
    client.on('error', () => undefined);
    await client.connect();
    return client;
  };
  return {
    name: 'pg-client-per-attempt',
    async transaction(isolation, body) {
      const client = await connect();
      const query = async (text: string, params: readonly unknown[]): Promise<Rows> => (await client.query(text, [...params])).rows;
      try {
        await client.query(`BEGIN ISOLATION LEVEL ${isolation.toUpperCase()}`);
        let value;
        try {
          value = await body({ tx: client, query });
        } catch (error) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw error;
        }
        // Resolve only once the server acknowledged COMMIT; a failed COMMIT rejects.
        const reply = await client.query('COMMIT');
        if (reply.command === 'ROLLBACK') throw new Error('the transaction had aborted');
        return value;
      } finally {
        await client.end().catch(() => undefined);
      }
    },
    async query(text, params) {
      const client = await connect();
      try {
        return (await client.query(text, [...params])).rows;
      } finally {
        await client.end().catch(() => undefined);
      }
    },
  };
}

export const database = (url: string) => transactionalDatabase(clientPerAttempt(url), { table: 'tool_receipt_outcomes' });
