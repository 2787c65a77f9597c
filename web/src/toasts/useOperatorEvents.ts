import { useEffect, useRef, useState } from 'react';
import { isForOperator, parseToast, type Toast } from './toastLogic';

export const EVENTS_URL = '/api/realtime/events';

export type StreamStatus = 'connecting' | 'open' | 'reconnecting' | 'closed';

/** Operator events that change what the device pages show (SPEC "Events"). */
export const DEVICE_EVENTS = [
  'agent_status_changed',
  'device_inventory_changed',
  'device_services_changed',
  'agent_update_progress_changed',
  // Watchdogs (issue 25): the alert queue and a device's watchdogs.
  'watchdog_incidents_changed',
  'device_watchdogs_changed',
] as const;
export type DeviceEventName = (typeof DEVICE_EVENTS)[number];

/**
 * Keeps one EventSource on the operator event stream while `username` is set.
 * Toasts go to `onToast`; device events (with their parsed data) to
 * `onDeviceEvent`.
 * The browser reconnects by itself after a dropped connection; when it gives
 * up (readyState CLOSED, for example after a non-200 answer) we open a new
 * stream after a growing delay and tell the caller, so it can check whether
 * the session ended. Exactly one stream is open at a time.
 */
export function useOperatorEvents(
  username: string | null,
  onToast: (toast: Toast) => void,
  onStreamClosed?: () => void,
  onDeviceEvent?: (event: DeviceEventName, data: unknown) => void,
): StreamStatus {
  const [status, setStatus] = useState<StreamStatus>('closed');
  const onToastRef = useRef(onToast);
  const onClosedRef = useRef(onStreamClosed);
  const onDeviceRef = useRef(onDeviceEvent);
  onToastRef.current = onToast;
  onClosedRef.current = onStreamClosed;
  onDeviceRef.current = onDeviceEvent;

  useEffect(() => {
    if (!username || typeof EventSource === 'undefined') return;
    let source: EventSource | null = null;
    let retryTimer: number | undefined;
    let attempt = 0;
    let disposed = false;

    const open = () => {
      if (disposed) return;
      setStatus(attempt === 0 ? 'connecting' : 'reconnecting');
      const es = new EventSource(EVENTS_URL, { withCredentials: true });
      source = es;
      es.onopen = () => {
        attempt = 0;
        setStatus('open');
      };
      es.addEventListener('service_notification', (ev) => {
        let data: unknown;
        try {
          data = JSON.parse((ev as MessageEvent<string>).data);
        } catch {
          return;
        }
        const toast = parseToast(data, Date.now());
        if (toast && isForOperator(toast, username)) onToastRef.current(toast);
      });
      for (const name of DEVICE_EVENTS) {
        es.addEventListener(name, (ev) => {
          let data: unknown = null;
          try {
            data = JSON.parse((ev as MessageEvent<string>).data);
          } catch {
            // Still a change to that kind of data: refresh without an identity.
          }
          onDeviceRef.current?.(name, data);
        });
      }
      es.onerror = () => {
        if (disposed || source !== es) return;
        if (es.readyState === EventSource.CLOSED) {
          es.close();
          source = null;
          attempt += 1;
          setStatus('reconnecting');
          onClosedRef.current?.();
          const delay = Math.min(30_000, 1000 * 2 ** Math.min(attempt - 1, 5));
          retryTimer = window.setTimeout(open, delay);
        } else {
          setStatus('reconnecting');
        }
      };
    };

    open();
    return () => {
      disposed = true;
      window.clearTimeout(retryTimer);
      source?.close();
      source = null;
      setStatus('closed');
    };
  }, [username]);

  return status;
}
