#!/usr/bin/env node
/**
 * Entry point of the `tool-receipts` binary: hands argv to the CLI and exits
 * with the code it returns. Everything else lives in `./cli.ts`.
 */
import { runCli } from './cli.js';

process.exitCode = await runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env });
