// Toasts the console raises itself (the outcome of an operator's action), shown
// in the same stack as the Engine's service_notification toasts.
import { createContext, useCallback, useContext } from 'react';
import { parseToast, type Toast, type ToastIconKind, type ToastVariant } from './toastLogic';

export interface LocalToast {
  title: string;
  message: string;
  variant?: ToastVariant;
  icon?: ToastIconKind;
  ttlMs?: number;
}

/** The stack's push; provided by the signed-in frame. */
export const ToastContext = createContext<((toast: Toast) => void) | null>(null);

export function useNotify(): (toast: LocalToast) => void {
  const push = useContext(ToastContext);
  if (!push) throw new Error('useNotify outside a toast stack');
  return useCallback(
    (t: LocalToast) => {
      const variant = t.variant ?? 'info';
      const toast = parseToast({ ...t, ttl_ms: t.ttlMs, icon: t.icon ?? variant, variant }, Date.now());
      if (toast) push(toast);
    },
    [push],
  );
}
