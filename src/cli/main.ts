#!/usr/bin/env node
/**
 * Entry point of the `tool-receipts` binary: hands argv to the CLI and exits
 * with the code it returns. Everything else lives in `./cli.ts`.
 */
import { runCli } from './cli.js';

// A reader that stopped early (`tool-receipts ambiguous | head -1`) has what it wanted: the rest has nowhere to go, so the
// command ends at once, quietly and with 0, instead of dying on the unhandled EPIPE. Any other stream error stays fatal.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    process.exit(0);
  });
}

process.exitCode = await runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env });
