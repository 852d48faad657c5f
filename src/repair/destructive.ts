/**
 * Builds a predicate that says whether a tool is destructive, from a list of
 * name patterns.
 *
 * A pattern matches a tool name exactly, ignoring letter case. A pattern that
 * ends in `*` matches every name starting with the text before the `*`, so a
 * whole family (`git_*`) has to be opted into on purpose. No other wildcard or
 * substring matching happens: `push` matches `Push` but not `PushNotification`,
 * and a `*` anywhere but at the end is an ordinary character.
 *
 * @param patterns - Tool names, or prefixes ending in `*`.
 * @returns A function that is `true` for the names the patterns cover.
 */
export function destructiveMatcher(patterns: readonly string[]): (toolName: string) => boolean {
  const exact = new Set<string>();
  const prefixes: string[] = [];
  for (const pattern of patterns) {
    const folded = pattern.toLowerCase();
    if (folded.endsWith('*')) prefixes.push(folded.slice(0, -1));
    else exact.add(folded);
  }
  return (toolName: string): boolean => {
    const folded = toolName.toLowerCase();
    return exact.has(folded) || prefixes.some((prefix) => folded.startsWith(prefix));
  };
}
