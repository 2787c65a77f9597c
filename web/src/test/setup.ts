import '@testing-library/jest-dom/vitest';
import { cleanup, configure } from '@testing-library/react';
import { afterEach } from 'vitest';

// findBy*/waitFor wait on a condition; this is only when they give up. The
// first AG Grid render in a jsdom worker can take a few seconds, and make test
// runs these files beside the Go tests on two cores (docs/benchmarks.md "Test
// suite time"): on a shared machine at load 20 one query waited more than
// 15 s. Below the 120 s test timeout, so a query that never matches still
// fails with its own message.
configure({ asyncUtilTimeout: 60_000 });

afterEach(() => {
  cleanup();
});

// jsdom lacks these; MUI and AG Grid use them for layout.
class ResizeObserverStub {
  observe() {}
  unobserve() {}
  disconnect() {}
}
if (!('ResizeObserver' in globalThis)) {
  (globalThis as unknown as { ResizeObserver: typeof ResizeObserverStub }).ResizeObserver = ResizeObserverStub;
}
if (!window.matchMedia) {
  window.matchMedia = (query: string) =>
    ({
      matches: false,
      media: query,
      onchange: null,
      addListener: () => {},
      removeListener: () => {},
      addEventListener: () => {},
      removeEventListener: () => {},
      dispatchEvent: () => false,
    }) as MediaQueryList;
}

// jsdom has no layout; CodeMirror measures text ranges.
if (typeof Range !== 'undefined' && !Range.prototype.getClientRects) {
  Range.prototype.getClientRects = () => [] as unknown as DOMRectList;
  Range.prototype.getBoundingClientRect = () => new DOMRect(0, 0, 0, 0);
}
