// Pure rules for the operator toast stack (SPEC "Events" > toast rules):
// at most 5 shown, newest on top, each dismissed after its ttl_ms (about 5.2 s
// by default), variants info/warning/error, icon names as hints with a bell
// as the fallback. The component only renders what these functions decide.

export const MAX_TOASTS = 5;
export const DEFAULT_TTL_MS = 5200;

export type ToastVariant = 'info' | 'warning' | 'error';
export type ToastIconKind = 'info' | 'filter' | 'schedule' | 'warning' | 'error' | 'device' | 'bell';

export interface Toast {
  id: string;
  title: string;
  message: string;
  icon: ToastIconKind;
  variant: ToastVariant;
  ttlMs: number;
  username: string | null;
  createdAt: string | null;
  /** Local clock (ms) when the console received it; expiry counts from here, not from created_at, so clock skew between browser and Engine does not matter. */
  receivedAt: number;
  expiresAt: number;
}

const VARIANTS: readonly ToastVariant[] = ['info', 'warning', 'error'];

export function normaliseVariant(value: unknown): ToastVariant {
  if (typeof value !== 'string') return 'info';
  const v = value.trim().toLowerCase();
  return (VARIANTS as readonly string[]).includes(v) ? (v as ToastVariant) : 'info';
}

const ICONS: Record<string, ToastIconKind> = {
  info: 'info',
  filter: 'filter',
  schedule: 'schedule',
  warning: 'warning',
  error: 'error',
  device: 'device',
};

export function iconKind(hint: unknown): ToastIconKind {
  if (typeof hint !== 'string') return 'bell';
  return ICONS[hint.trim().toLowerCase()] ?? 'bell';
}

export function normaliseTtl(value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) return DEFAULT_TTL_MS;
  return Math.round(value);
}

let localSeq = 0;

/**
 * Turns a `service_notification` payload into a toast, or null when it has no
 * message to show. Accepts the variant under its aliases `type`/`severity`
 * in case a sender bypassed the Engine's normalisation.
 */
export function parseToast(data: unknown, now: number): Toast | null {
  if (!data || typeof data !== 'object') return null;
  const d = data as Record<string, unknown>;
  const message = typeof d.message === 'string' ? d.message : '';
  if (!message.trim()) return null;
  const title = typeof d.title === 'string' && d.title.trim() ? d.title : 'Notification';
  const ttlMs = normaliseTtl(d.ttl_ms);
  const id = typeof d.id === 'string' && d.id ? d.id : `local-${now}-${++localSeq}`;
  return {
    id,
    title,
    message,
    icon: iconKind(d.icon),
    variant: normaliseVariant(d.variant ?? d.type ?? d.severity),
    ttlMs,
    username: typeof d.username === 'string' && d.username ? d.username : null,
    createdAt: typeof d.created_at === 'string' ? d.created_at : null,
    receivedAt: now,
    expiresAt: now + ttlMs,
  };
}

/** A toast addressed to one operator is shown only to that operator (the Engine filters too). */
export function isForOperator(toast: Pick<Toast, 'username'>, username: string | null | undefined): boolean {
  if (!toast.username) return true;
  if (!username) return false;
  return toast.username.toLowerCase() === username.toLowerCase();
}

/** Puts the toast on top, drops an earlier copy of the same id and keeps the newest `max`. */
export function pushToast(stack: readonly Toast[], toast: Toast, max: number = MAX_TOASTS): Toast[] {
  return [toast, ...stack.filter((t) => t.id !== toast.id)].slice(0, Math.max(0, max));
}

export function dismissToast(stack: readonly Toast[], id: string): Toast[] {
  return stack.filter((t) => t.id !== id);
}

export function pruneExpired(stack: readonly Toast[], now: number): Toast[] {
  const kept = stack.filter((t) => t.expiresAt > now);
  return kept.length === stack.length ? (stack as Toast[]) : kept;
}

/** Milliseconds until the next toast expires, or null for an empty stack. */
export function msUntilNextExpiry(stack: readonly Toast[], now: number): number | null {
  if (stack.length === 0) return null;
  const next = Math.min(...stack.map((t) => t.expiresAt));
  return Math.max(0, next - now);
}
