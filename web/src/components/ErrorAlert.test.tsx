import { describe, expect, it } from 'vitest';
import { render, screen } from '@testing-library/react';
import { ApiError } from '../api/client';
import { ErrorAlert, formatWait } from './ErrorAlert';

describe('formatWait', () => {
  it.each([
    [5, '5 s'],
    [89, '89 s'],
    [90, '1 min 30 s'],
    [120, '2 min'],
    [299, '4 min 59 s'],
  ])('%d -> %s', (s, want) => expect(formatWait(s)).toBe(want));
});

describe('ErrorAlert', () => {
  it('lists field errors that have no input', () => {
    const err = new ApiError({
      status: 400,
      code: 'validation_failed',
      message: 'request is invalid',
      fields: { name: 'is required', pending_token: 'is malformed' },
    });
    render(<ErrorAlert error={err} fields={['name']} />);
    expect(screen.getByTestId('error-alert')).toHaveTextContent('pending_token: is malformed');
    expect(screen.getByTestId('error-alert')).not.toHaveTextContent('is required');
  });

  it('stays hidden when every field error is on an input', () => {
    const err = new ApiError({ status: 400, code: 'validation_failed', message: 'x', fields: { name: 'is required' } });
    render(<ErrorAlert error={err} fields={['name']} />);
    expect(screen.queryByTestId('error-alert')).not.toBeInTheDocument();
  });

  it('explains a locked cipher and shows the request id of a 500', () => {
    const { rerender } = render(<ErrorAlert error={new ApiError({ status: 423, code: 'aegis_locked', message: 'locked' })} />);
    expect(screen.getByTestId('error-alert')).toHaveTextContent('Master cipher locked');
    rerender(<ErrorAlert error={new ApiError({ status: 500, code: 'internal', message: 'internal error', requestId: 'r-9' })} />);
    expect(screen.getByTestId('error-alert')).toHaveTextContent('Request ID: r-9');
  });
});
