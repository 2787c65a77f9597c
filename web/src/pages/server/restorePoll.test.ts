import { describe, expect, it } from 'vitest';
import { restoreDestination } from './restorePoll';

describe('restoreDestination', () => {
  const at = 1_000_000;
  it('waits for the minimum window', () => {
    expect(restoreDestination({ restoredAt: at, answers: ['aegis_unlock_required', 'aegis_unlock_required'] }, at + 9_999)).toBeNull();
  });
  it('waits for two stable answers', () => {
    expect(restoreDestination({ restoredAt: at, answers: ['aegis_unlock_required'] }, at + 20_000)).toBeNull();
    expect(restoreDestination({ restoredAt: at, answers: ['login_required', 'aegis_unlock_required'] }, at + 20_000)).toBeNull();
    expect(restoreDestination({ restoredAt: at, answers: [null, null] }, at + 20_000)).toBeNull();
  });
  it('navigates with the stable phase after the window', () => {
    expect(
      restoreDestination({ restoredAt: at, answers: [null, 'aegis_unlock_required', 'aegis_unlock_required'] }, at + 10_000),
    ).toBe('aegis_unlock_required');
  });
});
