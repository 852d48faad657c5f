/**
 * Every limit and in-flight cap of one worker, checked once when its
 * processor is made, and which of them count each tool's calls.
 */
import { InvalidOptionsError } from '../core/options.js';
import { isCap, type InFlightCap } from './caps.js';
import { assertOneCountPerName, checkLimits, limitsOfTool, type AnyLimit, type Limit } from './definitions.js';
import type { LimitStore } from './limit-store.js';

/** A limit given on a tool (`defineTool({ limits })`), before the wrapper checked it. */
export interface ToolLimits {
  readonly name: string;
  readonly limits?: readonly unknown[];
}

/**
 * Every limit of a worker, checked once when its processor is made: the
 * wrapper's own (`withToolReceipts({ limits })`, each for the tools it
 * names, or all) and each tool's (`defineTool({ limits })`, for that tool),
 * windows and in-flight caps alike.
 */
export class WorkerLimits {
  private readonly byTool = new Map<string, AnyLimit[]>();

  /**
   * Throws `options.invalid` naming the field (`limits[1].max`,
   * `tools[2].limits[0].per`) for a definition that cannot work, a `tools`
   * on a tool's own limit, and two limits of one name (one name is one count).
   */
  constructor(
    readonly store: LimitStore,
    given: unknown,
    tools: readonly ToolLimits[],
  ) {
    const site = { owner: 'withToolReceipts', option: 'limits' };
    const shared = given === undefined ? [] : checkLimits(given, site);
    const named = shared.map((limit, i) => ({ limit, at: `limits[${i}]` }));
    tools.forEach((tool, t) => {
      if (tool.limits === undefined) return;
      const option = `tools[${t}].limits`;
      const own = checkLimits(tool.limits, { owner: site.owner, option });
      own.forEach((limit, i) => {
        if (limit.tools !== undefined) {
          throw new InvalidOptionsError(
            site.owner,
            `${option}[${i}].tools`,
            `\`${option}[${i}].tools\` is set, but a tool's own limits count that tool only; leave it out, or give the limit to withToolReceipts`,
          );
        }
        named.push({ limit, at: `${option}[${i}]` });
      });
      this.byTool.set(tool.name, [...limitsOfTool(shared, tool.name), ...own]);
    });
    assertOneCountPerName(site.owner, named, ' (to share one count between tools, give it to withToolReceipts with `tools`)');
    for (const tool of tools) if (!this.byTool.has(tool.name)) this.byTool.set(tool.name, limitsOfTool(shared, tool.name));
    const every = [...shared, ...[...this.byTool.values()].flat().filter((l) => !shared.includes(l))];
    this.all = every.filter((l): l is Limit => !isCap(l));
    this.caps = every.filter(isCap);
    // Split once here: the call path asks for each call.
    for (const [tool, limits] of this.byTool) {
      this.windowsByTool.set(
        tool,
        limits.filter((l): l is Limit => !isCap(l)),
      );
      this.capsByTool.set(tool, limits.filter(isCap));
    }
  }

  private readonly windowsByTool = new Map<string, readonly Limit[]>();
  private readonly capsByTool = new Map<string, readonly InFlightCap[]>();

  /** Every window limit, once each, in the order given. */
  readonly all: readonly Limit[];
  /** Every in-flight cap, once each, in the order given. */
  readonly caps: readonly InFlightCap[];

  /** The window limits that count the calls of `toolName`. */
  of(toolName: string): readonly Limit[] {
    return this.windowsByTool.get(toolName) ?? [];
  }

  /** The in-flight caps that hold a slot for each execution of `toolName`. */
  capsOf(toolName: string): readonly InFlightCap[] {
    return this.capsByTool.get(toolName) ?? [];
  }

  /** Whether any limit or cap counts the calls of `toolName` (such a call is never claimed ahead: it passes its gate first). */
  covers(toolName: string): boolean {
    return (this.byTool.get(toolName)?.length ?? 0) > 0;
  }
}
