/// <reference types="vitest/config" />
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { defineConfig, type Plugin } from 'vite';
import react from '@vitejs/plugin-react';

// The Engine serves the built console from web/dist (embedded with go:embed)
// and answers /api, /health and /ready itself; in development Vite forwards
// those to a local Engine on :8080.
const engine = process.env.CAIRN_DEV_ENGINE ?? 'http://127.0.0.1:8080';

// emptyOutDir clears dist/, including the committed dist/.gitkeep that lets
// the Go build embed dist/ in a fresh clone; put it back after each build so
// a build never shows up as a deleted file in git.
function keepDistPlaceholder(): Plugin {
  return {
    name: 'cairn-keep-dist-gitkeep',
    apply: 'build',
    closeBundle() {
      const dist = resolve(import.meta.dirname, 'dist');
      mkdirSync(dist, { recursive: true });
      writeFileSync(resolve(dist, '.gitkeep'), '');
    },
  };
}

export default defineConfig({
  plugins: [react(), keepDistPlaceholder()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    chunkSizeWarningLimit: 1500,
    // Two pages: the console, and the API reference the Engine serves at
    // /api/docs (its own entry, so the console does not carry the viewer).
    rollupOptions: {
      input: {
        console: resolve(import.meta.dirname, 'index.html'),
        apidocs: resolve(import.meta.dirname, 'api-docs.html'),
      },
    },
  },
  server: {
    proxy: {
      // ws: the remote shell's WebSocket lives under /api too.
      '/api': { target: engine, changeOrigin: false, ws: true },
      '/health': { target: engine },
      '/ready': { target: engine },
    },
  },
  test: {
    environment: 'jsdom',
    globals: true,
    setupFiles: ['./src/test/setup.ts'],
    include: ['src/**/*.test.{ts,tsx}'],
    css: false,
    // Generous: CI and developer machines run several suites on two shared cores.
    testTimeout: 120_000,
    // Vitest's default for a run is one worker fewer than the cores: a
    // single worker on a 2-core machine, leaving a core idle through the
    // whole stage. The test files are CPU-bound (React renders and DOM
    // queries in jsdom) while the main process mostly waits on them, so
    // one worker per core, at least two (docs/benchmarks.md "Test suite time").
    maxWorkers: Math.max(2, availableParallelism()),
  },
});
