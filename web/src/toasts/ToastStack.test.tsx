import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, fireEvent, render, screen, within } from '@testing-library/react';
import { ThemeProvider } from '@mui/material/styles';
import { theme } from '../theme';
import { parseToast } from './toastLogic';
import { ToastStack, useToastStack } from './ToastStack';

let pushRef: ((data: Record<string, unknown>) => void) | null = null;

function Harness() {
  const { toasts, push, dismiss } = useToastStack();
  pushRef = (data) => push(parseToast(data, Date.now())!);
  return (
    <ThemeProvider theme={theme}>
      <ToastStack toasts={toasts} onDismiss={dismiss} />
    </ThemeProvider>
  );
}

function push(data: Record<string, unknown>) {
  act(() => pushRef!(data));
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('ToastStack', () => {
  it('shows title, multi-line message, variant colour and icon', () => {
    render(<Harness />);
    push({ id: 'a', title: 'Backup', message: 'line one\nline two', icon: 'schedule', variant: 'warning' });
    const toast = screen.getByTestId('toast');
    expect(toast).toHaveAttribute('data-variant', 'warning');
    expect(toast).toHaveAttribute('data-icon', 'schedule');
    expect(within(toast).getByText('Backup')).toBeInTheDocument();
    const message = within(toast).getByTestId('toast-message');
    expect(message.textContent).toBe('line one\nline two');
    expect(getComputedStyle(message).whiteSpace).toBe('pre-line');
    expect(within(toast).getByTestId('ScheduleIcon')).toBeInTheDocument();
  });

  it('falls back to the bell for unknown icons', () => {
    render(<Harness />);
    push({ id: 'a', message: 'x', icon: 'rocket' });
    expect(within(screen.getByTestId('toast')).getByTestId('NotificationsActiveIcon')).toBeInTheDocument();
  });

  it('keeps the 5 newest, newest on top', () => {
    render(<Harness />);
    for (let i = 1; i <= 6; i++) push({ id: `t${i}`, title: `Toast ${i}`, message: 'm', ttl_ms: 60_000 });
    const titles = screen.getAllByTestId('toast').map((t) => within(t).getByRole('heading', { hidden: true, level: 6 }).textContent);
    expect(titles).toEqual(['Toast 6', 'Toast 5', 'Toast 4', 'Toast 3', 'Toast 2']);
  });

  it('dismisses each toast after its ttl_ms (5200 ms by default)', () => {
    render(<Harness />);
    push({ id: 'default', message: 'default lifetime' });
    push({ id: 'long', message: 'long lifetime', ttl_ms: 10_000 });
    expect(screen.getAllByTestId('toast')).toHaveLength(2);
    act(() => vi.advanceTimersByTime(5100));
    expect(screen.getAllByTestId('toast')).toHaveLength(2);
    act(() => vi.advanceTimersByTime(200));
    expect(screen.getAllByTestId('toast')).toHaveLength(1);
    expect(screen.getByText('long lifetime')).toBeInTheDocument();
    act(() => vi.advanceTimersByTime(5000));
    expect(screen.queryAllByTestId('toast')).toHaveLength(0);
  });

  it('closes a toast with its close button', () => {
    render(<Harness />);
    push({ id: 'a', message: 'first', ttl_ms: 60_000 });
    push({ id: 'b', message: 'second', ttl_ms: 60_000 });
    const first = screen.getByText('first').closest('[data-testid="toast"]') as HTMLElement;
    fireEvent.click(within(first).getByRole('button', { name: 'Close notification' }));
    expect(screen.queryByText('first')).not.toBeInTheDocument();
    expect(screen.getByText('second')).toBeInTheDocument();
  });
});
