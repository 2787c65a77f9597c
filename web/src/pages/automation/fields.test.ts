import { describe, expect, it } from 'vitest';
import { ApiError } from '../../api/client';
import { apiFieldError, fieldMatches, shownFields } from './fields';

describe('field names', () => {
  it.each([
    ['steps[1].name', 'steps.1.name', true],
    ['parameters[0].default', 'parameters.0.default', true],
    ['device_guids[3]', 'device_guids', true],
    ['device_guids', 'device_guids', true],
    ['schedule.expression', 'schedule.expression', true],
    ['parameters.path', 'parameters.path', true],
    ['steps[1].name', 'steps.2.name', false],
    ['device_guids_extra', 'device_guids', false],
  ])('%s belongs at %s: %s', (key, field, want) => expect(fieldMatches(key, field)).toBe(want));

  it('finds the message and says which keys have an input', () => {
    const err = new ApiError({ status: 400, code: 'validation_failed', message: 'x', fields: { 'device_guids[1]': 'no device "x"', other: 'y' } });
    expect(apiFieldError(err, 'device_guids')).toBe('no device "x"');
    expect(shownFields(err, ['device_guids', 'body'])).toEqual(['device_guids[1]']);
  });
});
