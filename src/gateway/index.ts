/**
 * The MCP gateway (`tool-receipts gateway`): an MCP server in front of other
 * MCP servers whose every `tools/call` runs at most once, as a job on a
 * BullMQ queue that gateway workers run with receipts. Loaded by the CLI
 * only when the command is run (it needs the optional MCP SDK peer).
 */
export { loadGatewayConfig, parseGatewayConfig, type GatewayConfig } from './config.js';
export { runGateway, type GatewayRun } from './run.js';
export { GATEWAY_CALL_ID_META, GATEWAY_RUN_ID_META } from './scope.js';
export { GATEWAY_OUTCOME_META, GATEWAY_RECEIPT_META } from './results.js';
