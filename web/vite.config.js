import { defineConfig } from 'vite';
import precompress, { inlineEntry } from './compress.js';

// The build output is committed and CI rebuilds it to compare byte for byte,
// so nothing here may depend on time, paths or the machine.
export default defineConfig({
  base: '/',
  plugins: [inlineEntry(), precompress()],
  oxc: {
    jsx: { runtime: 'automatic', importSource: 'preact' },
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 1500,
    reportCompressedSize: false,
  },
  server: {
    proxy: {},
  },
});
