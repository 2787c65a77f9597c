import { describe, expect, it } from 'vitest';
import { QueryClient } from '@tanstack/react-query';
import { bareDetails, device } from './fixtures';
import { deviceActivityKey, deviceAgentUpdatesKey, deviceDetailsKey, invalidateForDeviceEvent, onDeviceGridEvent } from './queries';

function seeded() {
  const qc = new QueryClient();
  qc.setQueryData(['devices', 'list', { siteId: null, status: null }], [device('web-1'), device('db-1')]);
  qc.setQueryData(['sites'], []);
  qc.setQueryData(deviceDetailsKey('web-1'), bareDetails('web-1'));
  qc.setQueryData(deviceDetailsKey('db-1'), bareDetails('db-1'));
  qc.setQueryData(deviceActivityKey('web-1'), []);
  qc.setQueryData(deviceActivityKey('db-1'), []);
  qc.setQueryData(deviceAgentUpdatesKey('guid-web-1'), { active: null, history: [] });
  qc.setQueryData(deviceAgentUpdatesKey('guid-db-1'), { active: null, history: [] });
  return qc;
}

const stale = (qc: QueryClient, key: readonly unknown[]) => qc.getQueryState(key)?.isInvalidated ?? false;

describe('invalidateForDeviceEvent', () => {
  it('marks the named device stale, not other devices, pages or whole lists', () => {
    const qc = seeded();
    invalidateForDeviceEvent(qc, { hostname: 'WEB-1' });
    expect(stale(qc, ['devices', 'list', { siteId: null, status: null }])).toBe(false);
    expect(stale(qc, deviceDetailsKey('web-1'))).toBe(true);
    expect(stale(qc, deviceActivityKey('web-1'))).toBe(true);
    expect(stale(qc, deviceDetailsKey('db-1'))).toBe(false);
    expect(stale(qc, ['sites'])).toBe(false);
  });

  it('finds the device by guid when the event has no hostname', () => {
    const qc = seeded();
    invalidateForDeviceEvent(qc, { guid: 'guid-db-1' });
    expect(stale(qc, deviceDetailsKey('db-1'))).toBe(true);
    expect(stale(qc, deviceDetailsKey('web-1'))).toBe(false);
  });

  it('refreshes every device page when the event names no device', () => {
    const qc = seeded();
    invalidateForDeviceEvent(qc, null);
    expect(stale(qc, deviceDetailsKey('db-1'))).toBe(true);
    expect(stale(qc, deviceDetailsKey('web-1'))).toBe(true);
  });

  it('tells subscribed device grids which device the event is about', () => {
    const qc = seeded();
    const heard: unknown[] = [];
    const stop = onDeviceGridEvent((e) => heard.push(e));
    invalidateForDeviceEvent(qc, { guid: 'guid-web-1', hostname: 'web-1' });
    invalidateForDeviceEvent(qc, null);
    stop();
    invalidateForDeviceEvent(qc, { guid: 'guid-db-1' });
    expect(heard).toEqual([
      { guid: 'guid-web-1', hostname: 'web-1' },
      { guid: null, hostname: null },
    ]);
  });

  it('marks the agent updates of the device an update event names stale', () => {
    const qc = seeded();
    invalidateForDeviceEvent(qc, { guid: 'guid-web-1', operation_id: 'op-1', status: 'running', phase: 'installing' });
    expect(stale(qc, deviceAgentUpdatesKey('guid-web-1'))).toBe(true);
    expect(stale(qc, deviceAgentUpdatesKey('guid-db-1'))).toBe(false);
  });
});
