/** Errors the console raises on purpose, each with a stable code. */
import { ToolReceiptsError } from '../core/errors.js';

/** The console was asked to listen beyond the loopback interface without any token. */
export class ConsoleTokenRequiredError extends ToolReceiptsError {
  readonly code = 'console.token_required';
  constructor(readonly host: string) {
    super(
      `the console binds ${host}, beyond the loopback interface, so it needs a token: pass --token <operator token> ` +
        '(or set TOOL_RECEIPTS_CONSOLE_TOKEN), and --read-token for read-only users if you want them',
    );
  }
}

/** The console's options are not usable (a token too short, a base path that is not a path…). */
export class ConsoleOptionsError extends ToolReceiptsError {
  readonly code = 'console.invalid_options';
}
