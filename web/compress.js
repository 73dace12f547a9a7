// A Vite plugin that writes a brotli (.br) and a gzip (.gz) copy beside each text file of the
// build, so tandem serves compressed bytes without compressing at request time (web/web.go picks
// one by the request's Accept-Encoding). Both encoders are deterministic at a fixed level and the
// gzip header carries no time or file name, so web/check-dist.sh still compares byte for byte.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

// Smaller files gain less than the headers they would cost.
const minBytes = 1024;
const textual = /\.(js|mjs|css|html|svg|json|webmanifest)$/;

function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(path.join(dir, e.name)) : [path.join(dir, e.name)],
  );
}

/**
 * Moves the app's stylesheet from the head to the end of the body: in the head it blocks the first
 * paint until it has arrived, one more round trip on a slow link, while the shell above it needs
 * only its own inline style. The script still runs after the stylesheet has loaded.
 */
export function shellFirst() {
  return {
    name: 'tandem-shell-first',
    apply: 'build',
    transformIndexHtml: {
      order: 'post',
      handler(html) {
        const links = html.match(/\s*<link rel="stylesheet"[^>]*>/g) || [];
        for (const l of links) html = html.replace(l, '');
        return html.replace('</body>', links.map((l) => l.trim()).join('\n') + '\n  </body>');
      },
    },
  };
}

export default function precompress() {
  let outDir;
  return {
    name: 'tandem-precompress',
    apply: 'build',
    configResolved(config) {
      outDir = path.resolve(config.root, config.build.outDir);
    },
    closeBundle() {
      for (const file of files(outDir)) {
        if (!textual.test(file)) continue;
        const data = readFileSync(file);
        if (data.length < minBytes) continue;
        const br = zlib.brotliCompressSync(data, {
          params: {
            [zlib.constants.BROTLI_PARAM_QUALITY]: zlib.constants.BROTLI_MAX_QUALITY,
            [zlib.constants.BROTLI_PARAM_SIZE_HINT]: data.length,
          },
        });
        const gz = zlib.gzipSync(data, { level: zlib.constants.Z_BEST_COMPRESSION });
        gz[9] = 3; // the header's OS byte (zlib writes the build machine's): always Unix
        // Only worth serving when smaller than the original.
        if (br.length < data.length) writeFileSync(file + '.br', br);
        if (gz.length < data.length) writeFileSync(file + '.gz', gz);
      }
    },
  };
}
