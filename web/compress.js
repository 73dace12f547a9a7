// A Vite plugin that writes a brotli (.br) and a gzip (.gz) copy beside each text file of the
// build, so tandem serves compressed bytes without compressing at request time (web/web.go picks
// one by the request's Accept-Encoding). Both encoders are deterministic at a fixed level and the
// gzip header carries no time or file name, so web/check-dist.sh still compares byte for byte.
import { readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
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
 * Puts the app's script and stylesheet into index.html: on a slow link every request costs a
 * round trip (562 ms on slow 4G), and the page is usable only once the script has run, so the
 * script comes with the document instead of one round trip after it. The stylesheet goes into the
 * head (it is small); the script, a module and so deferred anyway, to the end of the body, so the
 * shell above it paints while it still arrives. Its dynamic imports (the terminal's chunks) are
 * made absolute, since an inline script resolves them against the page's address, not /assets/.
 * The build fails when the script holds text that would end or confuse the element it is put in.
 */
export function inlineEntry() {
  let outDir;
  return {
    name: 'tandem-inline-entry',
    apply: 'build',
    configResolved(config) {
      outDir = path.resolve(config.root, config.build.outDir);
    },
    // After the bundle is final (Vite's own rewrites done) and written, before precompress.
    writeBundle(_, bundle) {
      const file = (name) => path.join(outDir, name);
      let html = readFileSync(file('index.html'), 'utf8');
      const entry = Object.values(bundle).find((c) => c.type === 'chunk' && c.isEntry);
      let code = entry.code;
      for (const dyn of entry.dynamicImports) {
        const rel = 'import(`./' + path.posix.basename(dyn) + '`)';
        code = code.split(rel).join('import(`/' + dyn + '`)');
      }
      if (/import\(`\.\//.test(code)) throw new Error('inline entry: a relative dynamic import is left');
      // What would end the element or change how the HTML parser reads it, written as the HTML
      // standard advises for inline scripts: "<" as \x3C, which the minified code holds only in
      // string and regular expression literals (marked's and highlight.js's HTML rules), where it
      // means the same. After a backslash it would not, so that fails the build.
      if (/\\(<\/script|<!--|<script)/i.test(code)) throw new Error('inline entry: an escaped <script, </script or <!-- cannot be rewritten');
      code = code.replace(/<(\/script|!--|script)/gi, '\\x3C$1');
      const tag = `<script type="module" crossorigin src="/${entry.fileName}"></script>`;
      if (!html.includes(tag)) throw new Error(`inline entry: index.html has no ${tag}`);
      html = html.replace(tag, '').replace('</body>', () => `<script type="module">${code}</script>\n  </body>`);
      unlinkSync(file(entry.fileName));
      for (const css of entry.viteMetadata?.importedCss || []) {
        const link = `<link rel="stylesheet" crossorigin href="/${css}">`;
        const text = readFileSync(file(css), 'utf8');
        if (!html.includes(link)) throw new Error(`inline entry: index.html has no ${link}`);
        if (/<\/style/i.test(text)) throw new Error('inline entry: the stylesheet holds </style');
        html = html.replace(link, '').replace('</head>', () => `<style>${text}</style>\n  </head>`);
        unlinkSync(file(css));
      }
      writeFileSync(file('index.html'), html);
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
