// Schedules in words for the jobs grid, and the editor's form state.
import type { Schedule } from '../../api/types';
import type { Schema } from '../../api/typed';
import { formatDateTime } from '../../components/format';

/** A schedule as the Engine sends it: one object with the fields of its type. */
export type WireSchedule = Schema<'Schedule'>;

/** The wire schedule as the union its type names (an unknown type reads as manual). */
export function scheduleOf(s: WireSchedule | Schedule): Schedule {
  const w = s as WireSchedule;
  switch (w.type) {
    case 'once':
      return { type: 'once', at: w.at ?? '' };
    case 'cron':
      return { type: 'cron', expression: w.expression ?? '', timezone: w.timezone ?? '' };
    case 'interval':
      return { type: 'interval', every_seconds: w.every_seconds ?? 0 };
    default:
      return { type: 'manual' };
  }
}

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const pad = (n: string) => n.padStart(2, '0');
const isNum = (s: string) => /^\d+$/.test(s);

function unit(n: number, word: string) {
  return n === 1 ? word : `${n} ${word}s`;
}

/** "every 5 minutes", "every 2 hours", "every day" for an interval in seconds. */
export function describeInterval(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds <= 0) return 'never';
  if (seconds % 86400 === 0) return `every ${unit(seconds / 86400, 'day')}`;
  if (seconds % 3600 === 0) return `every ${unit(seconds / 3600, 'hour')}`;
  if (seconds % 60 === 0) return `every ${unit(seconds / 60, 'minute')}`;
  return `every ${unit(seconds, 'second')}`;
}

/** The common cron shapes in words; anything else as the expression itself. */
const MACROS: Record<string, string> = {
  '@hourly': 'every hour',
  '@daily': 'every day at 00:00',
  '@midnight': 'every day at 00:00',
  '@weekly': 'every Sunday at 00:00',
  '@monthly': 'monthly on day 1 at 00:00',
  '@yearly': 'every 1 January at 00:00',
  '@annually': 'every 1 January at 00:00',
};

export function describeCron(expression: string): string {
  const macro = MACROS[expression.trim().toLowerCase()];
  if (macro) return macro;
  const parts = expression.trim().split(/\s+/);
  if (parts.length !== 5) return `cron ${expression.trim()}`;
  const [min, hour, dom, mon, dow] = parts;
  const step = (f: string) => /^\*\/(\d+)$/.exec(f)?.[1];
  if (mon === '*' && dom === '*' && dow === '*') {
    if (min === '*' && hour === '*') return 'every minute';
    if (step(min) && hour === '*') return `every ${unit(Number(step(min)), 'minute')}`;
    if (isNum(min) && hour === '*') return `every hour at minute ${Number(min)}`;
    if (isNum(min) && step(hour)) return `every ${unit(Number(step(hour)), 'hour')} at minute ${Number(min)}`;
    if (isNum(min) && isNum(hour)) return `every day at ${pad(hour)}:${pad(min)}`;
  }
  if (isNum(min) && isNum(hour) && mon === '*') {
    const at = `${pad(hour)}:${pad(min)}`;
    if (dom === '*' && dow === '1-5') return `weekdays at ${at}`;
    if (dom === '*' && isNum(dow) && Number(dow) <= 7) return `every ${DAYS[Number(dow) % 7]} at ${at}`;
    if (isNum(dom) && dow === '*') return `monthly on day ${Number(dom)} at ${at}`;
  }
  return `cron ${expression.trim()}`;
}

export function describeSchedule(wire: WireSchedule | Schedule | null | undefined): string {
  if (!wire) return '—';
  const s = scheduleOf(wire);
  switch (s.type) {
    case 'once':
      return `Once, ${formatDateTime(s.at)}`;
    case 'cron': {
      const words = describeCron(s.expression);
      return `${words.charAt(0).toUpperCase()}${words.slice(1)} (${s.timezone || 'UTC'})`;
    }
    case 'interval': {
      const words = describeInterval(s.every_seconds);
      return `${words.charAt(0).toUpperCase()}${words.slice(1)}`;
    }
    case 'manual':
      return 'Manually';
    default:
      return '—';
  }
}

export type IntervalUnit = 'minutes' | 'hours' | 'days';
export const UNIT_SECONDS: Record<IntervalUnit, number> = { minutes: 60, hours: 3600, days: 86400 };

export interface ScheduleForm {
  type: Schedule['type'];
  /** datetime-local value, in the browser's zone. */
  at: string;
  expression: string;
  timezone: string;
  every: string;
  unit: IntervalUnit;
}

const localInput = (d: Date) => {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
};

export function browserTimeZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
}

export function scheduleToForm(wire: WireSchedule | Schedule | undefined): ScheduleForm {
  const s = wire && scheduleOf(wire);
  const hourFromNow = new Date(Date.now() + 3600_000);
  hourFromNow.setSeconds(0, 0);
  const form: ScheduleForm = {
    type: s?.type ?? 'cron',
    at: localInput(hourFromNow),
    expression: '0 3 * * *',
    timezone: browserTimeZone(),
    every: '1',
    unit: 'hours',
  };
  if (s?.type === 'once') form.at = localInput(new Date(s.at));
  if (s?.type === 'cron') {
    form.expression = s.expression;
    form.timezone = s.timezone || 'UTC';
  }
  if (s?.type === 'interval') {
    const u: IntervalUnit = s.every_seconds % 86400 === 0 ? 'days' : s.every_seconds % 3600 === 0 ? 'hours' : 'minutes';
    form.unit = u;
    form.every = String(s.every_seconds / UNIT_SECONDS[u]);
  }
  return form;
}

export function formToSchedule(f: ScheduleForm): Schedule {
  switch (f.type) {
    case 'once': {
      const d = new Date(f.at);
      return { type: 'once', at: Number.isNaN(d.getTime()) ? f.at : d.toISOString() };
    }
    case 'cron':
      return { type: 'cron', expression: f.expression.trim(), timezone: f.timezone };
    case 'interval':
      return { type: 'interval', every_seconds: Math.round(Number(f.every) * UNIT_SECONDS[f.unit]) };
    default:
      return { type: 'manual' };
  }
}

/** Local checks; the Engine validates the cron expression and zone (its errors come back with the preview). */
export function checkSchedule(f: ScheduleForm): Record<string, string> {
  const errors: Record<string, string> = {};
  if (f.type === 'once' && Number.isNaN(new Date(f.at).getTime())) errors['schedule.at'] = 'Pick a date and time.';
  if (f.type === 'cron') {
    const macro = /^@\w+$/.test(f.expression.trim());
    if (!macro && f.expression.trim().split(/\s+/).length !== 5) {
      errors['schedule.expression'] = 'Five fields (minute hour day month weekday), or @hourly, @daily, @weekly, @monthly, @yearly.';
    }
    if (!f.timezone) errors['schedule.timezone'] = 'Pick a time zone.';
  }
  if (f.type === 'interval') {
    const n = Number(f.every);
    if (!f.every.trim() || !Number.isFinite(n) || n <= 0) errors['schedule.every_seconds'] = 'Enter a positive number.';
    else if (n * UNIT_SECONDS[f.unit] < 60) errors['schedule.every_seconds'] = 'At least one minute.';
  }
  return errors;
}

export function timeZones(): string[] {
  const intl = Intl as unknown as { supportedValuesOf?: (k: string) => string[] };
  const zones = intl.supportedValuesOf?.('timeZone') ?? [];
  return zones.includes('UTC') ? zones : ['UTC', ...zones];
}
