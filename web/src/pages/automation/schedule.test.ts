import { describe, expect, it } from 'vitest';
import { checkSchedule, describeCron, describeInterval, describeSchedule, formToSchedule, scheduleToForm } from './schedule';

describe('schedules in words', () => {
  it.each([
    ['*/5 * * * *', 'every 5 minutes'],
    ['* * * * *', 'every minute'],
    ['15 * * * *', 'every hour at minute 15'],
    ['0 */6 * * *', 'every 6 hours at minute 0'],
    ['30 3 * * *', 'every day at 03:30'],
    ['0 8 * * 1-5', 'weekdays at 08:00'],
    ['0 22 * * 0', 'every Sunday at 22:00'],
    ['0 1 15 * *', 'monthly on day 15 at 01:00'],
    ['0 1 1 1 *', 'cron 0 1 1 1 *'],
    ['@daily', 'every day at 00:00'],
    ['@hourly', 'every hour'],
  ])('%s reads "%s"', (expr, words) => expect(describeCron(expr)).toBe(words));

  it.each([
    [60, 'every minute'],
    [300, 'every 5 minutes'],
    [7200, 'every 2 hours'],
    [86400, 'every day'],
    [90, 'every 90 seconds'],
  ])('an interval of %i s reads "%s"', (s, words) => expect(describeInterval(s)).toBe(words));

  it('names the zone of a cron schedule and says manual plainly', () => {
    expect(describeSchedule({ type: 'cron', expression: '*/5 * * * *', timezone: 'Europe/Berlin' })).toBe('Every 5 minutes (Europe/Berlin)');
    expect(describeSchedule({ type: 'manual' })).toBe('Manually');
    expect(describeSchedule({ type: 'interval', every_seconds: 3600 })).toBe('Every hour');
  });
});

describe('schedule form', () => {
  it('round-trips each schedule type', () => {
    expect(formToSchedule(scheduleToForm({ type: 'cron', expression: '0 3 * * *', timezone: 'UTC' }))).toEqual({
      type: 'cron',
      expression: '0 3 * * *',
      timezone: 'UTC',
    });
    expect(formToSchedule(scheduleToForm({ type: 'interval', every_seconds: 7200 }))).toEqual({ type: 'interval', every_seconds: 7200 });
    expect(formToSchedule(scheduleToForm({ type: 'manual' }))).toEqual({ type: 'manual' });
    const once = formToSchedule(scheduleToForm({ type: 'once', at: '2030-01-02T03:04:00Z' }));
    expect(once).toEqual({ type: 'once', at: '2030-01-02T03:04:00.000Z' });
  });

  it('checks a cron expression has five fields and an interval is at least a minute', () => {
    const f = scheduleToForm(undefined);
    expect(checkSchedule({ ...f, type: 'cron', expression: '* * *' })).toHaveProperty('schedule.expression');
    expect(checkSchedule({ ...f, type: 'interval', every: '0', unit: 'minutes' })).toHaveProperty('schedule.every_seconds');
    expect(checkSchedule({ ...f, type: 'cron', expression: '*/5 * * * *' })).toEqual({});
    expect(checkSchedule({ ...f, type: 'cron', expression: '@weekly' })).toEqual({});
  });
});
