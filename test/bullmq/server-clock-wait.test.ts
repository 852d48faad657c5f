/**
 * A waiting job is parked on the Redis server's clock: a worker whose own
 * clock is ten minutes off parks it where the rest of the fleet finds it on
 * time. The skewed worker is a real process with its Date.now shifted.
 */
import { describe, it } from 'vitest';
import { useLanes } from './fixture.js';
import { parkOnServerClock, TEN_MINUTES } from './server-clock-park.js';

const lane = useLanes();

describe.each([
  ['fast', TEN_MINUTES],
  ['slow', -TEN_MINUTES],
])('a worker whose clock runs ten minutes %s', (_name, skewMs) => {
  it('parks a waiting job due on the server clock, and a correct worker picks it up on time', async () => {
    await parkOnServerClock(await lane(), skewMs, 'skew');
  });
});
