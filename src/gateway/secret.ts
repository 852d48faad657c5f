/**
 * Secrets in the gateway's configuration (tokens, upstream headers): written
 * in the file, or named there and read from the environment.
 */
import { InvalidOptionsError, refuseOption, type OptionSite } from '../core/options.js';

/**
 * A secret written in the file, or `{ "env": "NAME" }` for one read from the
 * environment (kept out of the file and of `ps`). A variable that is unset
 * or blank is refused, naming it.
 */
export function secretValue(value: unknown, site: OptionSite, env: Readonly<Record<string, string | undefined>>): string {
  if (typeof value === 'string' && value !== '') return value;
  if (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.keys(value as object).length === 1 &&
    typeof (value as { env?: unknown }).env === 'string'
  ) {
    const name = (value as { env: string }).env;
    const found = env[name];
    if (found === undefined || found.trim() === '') {
      throw new InvalidOptionsError(site.owner, site.option, `\`${site.option}\` reads the environment variable ${name}, which is not set`);
    }
    return found;
  }
  throw refuseOption(site, 'a string, or { "env": "NAME" } to read it from the environment', value, true);
}
