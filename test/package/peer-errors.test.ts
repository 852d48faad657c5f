/**
 * How the consumer test tells errors inside a peer's own declarations (reported,
 * not failed on) from errors in the app's sources or in this package's
 * declarations (failed on), from tsc's printed diagnostics.
 */
import { describe, expect, it } from 'vitest';
import { splitPeerErrors } from './scratch-app.js';

const peer = [
  "node_modules/ioredis/built/errors/WatchError.d.ts(1,28): error TS7016: Could not find a declaration file for module 'redis-errors'.",
  "  Try `npm i --save-dev @types/redis-errors` if it exists or add a new declaration (.d.ts) file containing `declare module 'redis-errors';`",
].join('\n');
const scopedPeer = "node_modules/@scope/lib/index.d.ts(3,1): error TS2304: Cannot find name 'Foo'.";
const ownDeclaration = "node_modules/bullmq-tool-receipts/dist/index.d.ts(9,2): error TS2322: Type 'x' is not assignable.";
const app = "src/use.ts(4,7): error TS2322: Type 'string' is not assignable to type 'number'.";
const global = "error TS2688: Cannot find type definition file for 'node'.";

describe('splitPeerErrors', () => {
  it('passes a run whose only errors sit in peers’ declarations, and lists each with its continuation lines', () => {
    const split = splitPeerErrors({ code: 2, stdout: `${peer}\n${scopedPeer}\n`, stderr: '' });
    expect(split.code).toBe(0);
    expect(split.stdout).toBe('');
    expect(split.peerErrors).toEqual([peer, scopedPeer]);
  });

  it.each([
    ['the app’s source', app],
    ['this package’s own declarations', ownDeclaration],
    ['no file at all', global],
  ])('fails on an error in %s, keeping it and reporting the peer one beside it', (_, own) => {
    const split = splitPeerErrors({ code: 2, stdout: `${peer}\n${own}\n`, stderr: '' });
    expect(split.code).toBe(2);
    expect(split.stdout).toBe(`${own}\n`);
    expect(split.peerErrors).toEqual([peer]);
  });

  it('keeps a failure that printed no diagnostic (tsc crashed or was killed)', () => {
    expect(splitPeerErrors({ code: 1, stdout: '', stderr: 'killed after 240 s' }).code).toBe(1);
    expect(splitPeerErrors({ code: 2, stdout: `${peer}\n`, stderr: 'out of memory' }).code).toBe(2);
  });

  it('leaves a clean run clean', () => {
    expect(splitPeerErrors({ code: 0, stdout: '', stderr: '' })).toEqual({ code: 0, stdout: '', stderr: '', peerErrors: [] });
  });
});
