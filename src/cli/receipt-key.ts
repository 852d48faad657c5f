/** Receipt keys read back into calls: shared with the console, so it lives in `src/operator`. */
export { parseReceiptRedisKey, type ParsedReceiptKey } from '../operator/receipt-key.js';
