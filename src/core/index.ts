export { ToolReceiptsError } from './errors.js';
