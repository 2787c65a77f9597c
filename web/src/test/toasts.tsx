import type { ReactNode } from 'react';
import { ToastContext } from '../toasts/notify';
import { ToastStack, useToastStack } from '../toasts/ToastStack';

/** The signed-in frame's toast stack, for pages rendered without App. */
export function WithToasts({ children }: { children: ReactNode }) {
  const { toasts, push, dismiss } = useToastStack();
  return (
    <ToastContext.Provider value={push}>
      {children}
      <ToastStack toasts={toasts} onDismiss={dismiss} />
    </ToastContext.Provider>
  );
}
