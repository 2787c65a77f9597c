import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, render } from '@testing-library/react';
import type { Toast } from './toastLogic';
import { useOperatorEvents, type StreamStatus } from './useOperatorEvents';

class FakeEventSource {
  static CONNECTING = 0;
  static OPEN = 1;
  static CLOSED = 2;
  static instances: FakeEventSource[] = [];
  readonly url: string;
  readonly withCredentials: boolean;
  readyState = FakeEventSource.CONNECTING;
  onopen: (() => void) | null = null;
  onerror: (() => void) | null = null;
  closed = false;
  private listeners = new Map<string, ((ev: MessageEvent) => void)[]>();

  constructor(url: string, init?: EventSourceInit) {
    this.url = url;
    this.withCredentials = Boolean(init?.withCredentials);
    FakeEventSource.instances.push(this);
  }
  addEventListener(type: string, fn: (ev: MessageEvent) => void) {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), fn]);
  }
  close() {
    this.closed = true;
    this.readyState = FakeEventSource.CLOSED;
  }
  // Test helpers.
  open() {
    this.readyState = FakeEventSource.OPEN;
    this.onopen?.();
  }
  emit(type: string, data: string) {
    for (const fn of this.listeners.get(type) ?? []) fn(new MessageEvent(type, { data }));
  }
  fail(permanently: boolean) {
    this.readyState = permanently ? FakeEventSource.CLOSED : FakeEventSource.CONNECTING;
    this.onerror?.();
  }
}

let lastStatus: StreamStatus = 'closed';
function Harness({
  username,
  onToast,
  onClosed,
  onDevice,
}: {
  username: string | null;
  onToast: (t: Toast) => void;
  onClosed?: () => void;
  onDevice?: (event: string, data: unknown) => void;
}) {
  lastStatus = useOperatorEvents(username, onToast, onClosed, onDevice);
  return null;
}

const open = () => FakeEventSource.instances.filter((s) => !s.closed);

beforeEach(() => {
  FakeEventSource.instances = [];
  vi.stubGlobal('EventSource', FakeEventSource);
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe('useOperatorEvents', () => {
  it('opens one stream on the events URL and turns service_notification into toasts', () => {
    const toasts: Toast[] = [];
    render(<Harness username="admin" onToast={(t) => toasts.push(t)} />);
    expect(open()).toHaveLength(1);
    const es = open()[0];
    expect(es.url).toBe('/api/realtime/events');
    act(() => es.open());
    expect(lastStatus).toBe('open');

    act(() => {
      es.emit('ready', '{"stream_id":"s1"}');
      es.emit('service_notification', JSON.stringify({ id: '1', title: 'Hi', message: 'hello', variant: 'ERROR' }));
      es.emit('service_notification', 'not json');
      es.emit('service_notification', JSON.stringify({ id: '2', message: 'for bob', username: 'bob' }));
      es.emit('service_notification', JSON.stringify({ id: '3', message: 'for me', username: 'admin' }));
    });
    expect(toasts.map((t) => [t.id, t.variant])).toEqual([
      ['1', 'error'],
      ['3', 'info'],
    ]);
  });

  it('passes device events with their data to the device callback, not to toasts', () => {
    const toasts: Toast[] = [];
    const seen: [string, unknown][] = [];
    render(<Harness username="admin" onToast={(t) => toasts.push(t)} onDevice={(e, d) => seen.push([e, d])} />);
    const es = open()[0];
    act(() => {
      es.emit('agent_status_changed', JSON.stringify({ guid: 'g1', hostname: 'web-1' }));
      es.emit('device_inventory_changed', JSON.stringify({ hostname: 'db-1' }));
      es.emit('device_services_changed', 'not json');
      es.emit('agent_update_progress_changed', JSON.stringify({ guid: 'g1', operation_id: 'op-1', status: 'running', phase: 'downloading' }));
      es.emit('watchdog_incidents_changed', JSON.stringify({ incident_id: 7, guid: 'g1' }));
      es.emit('server_operator_presence_changed', JSON.stringify({}));
    });
    expect(seen).toEqual([
      ['agent_status_changed', { guid: 'g1', hostname: 'web-1' }],
      ['device_inventory_changed', { hostname: 'db-1' }],
      ['device_services_changed', null],
      ['agent_update_progress_changed', { guid: 'g1', operation_id: 'op-1', status: 'running', phase: 'downloading' }],
      ['watchdog_incidents_changed', { incident_id: 7, guid: 'g1' }],
    ]);
    expect(toasts).toHaveLength(0);
  });

  it('lets the browser retry a dropped stream and reopens one it gave up on, without leaking', () => {
    const onClosed = vi.fn();
    render(<Harness username="admin" onToast={() => {}} onClosed={onClosed} />);
    const first = open()[0];
    act(() => first.fail(false)); // the browser reconnects by itself
    expect(lastStatus).toBe('reconnecting');
    expect(FakeEventSource.instances).toHaveLength(1);

    act(() => first.fail(true)); // the browser gave up
    expect(first.closed).toBe(true);
    expect(onClosed).toHaveBeenCalledTimes(1);
    expect(open()).toHaveLength(0);
    act(() => vi.advanceTimersByTime(1000));
    expect(FakeEventSource.instances).toHaveLength(2);
    expect(open()).toHaveLength(1);
    act(() => open()[0].open());
    expect(lastStatus).toBe('open');
  });

  it('closes the stream on sign-out and on unmount', () => {
    const { rerender, unmount } = render(<Harness username="admin" onToast={() => {}} />);
    expect(open()).toHaveLength(1);
    rerender(<Harness username={null} onToast={() => {}} />);
    expect(open()).toHaveLength(0);
    rerender(<Harness username="admin" onToast={() => {}} />);
    expect(open()).toHaveLength(1);
    unmount();
    expect(open()).toHaveLength(0);
  });

  it('cancels a pending reconnect on unmount', () => {
    const { unmount } = render(<Harness username="admin" onToast={() => {}} />);
    act(() => open()[0].fail(true));
    unmount();
    act(() => vi.advanceTimersByTime(60_000));
    expect(FakeEventSource.instances).toHaveLength(1);
  });
});
