// The console's own live feed (GET /v1/console/events): the fleet and the
// lease counts, pushed by the exchange as server-sent events.

import { useEffect, useState } from 'preact/hooks';

import type { Fleet, LeaseCounts } from './types.js';

export interface Live {
  fleet: Fleet | undefined;
  leases: LeaseCounts | undefined;
  connected: boolean;
}

export function useLive(): Live {
  const [live, setLive] = useState<Live>({ fleet: undefined, leases: undefined, connected: false });
  useEffect(() => {
    const source = new EventSource('/v1/console/events');
    source.addEventListener('open', () => setLive((l) => ({ ...l, connected: true })));
    source.addEventListener('error', () => setLive((l) => ({ ...l, connected: false })));
    source.addEventListener('fleet', (e) => {
      const fleet = JSON.parse((e as MessageEvent<string>).data) as Fleet;
      setLive((l) => ({ ...l, fleet, connected: true }));
    });
    source.addEventListener('leases', (e) => {
      const leases = JSON.parse((e as MessageEvent<string>).data) as LeaseCounts;
      setLive((l) => ({ ...l, leases, connected: true }));
    });
    return () => source.close();
  }, []);
  return live;
}
