/** One file of a folder being packed, its path relative to the folder's root. */
export interface PackFile {
  path: string;
  file: Blob;
}

/**
 * Packs files into a gzipped POSIX ustar archive in the browser (CompressionStream), the shape
 * `POST /v1/deploy` takes. Paths longer than ustar's 100 bytes use its 155-byte prefix field;
 * one that fits in neither is refused rather than truncated.
 */
export async function packTarGz(files: PackFile[]): Promise<Blob> {
  const parts: BlobPart[] = [];
  for (const { path, file } of files) {
    parts.push(header(path, file.size), file);
    const pad = (512 - (file.size % 512)) % 512;
    if (pad) parts.push(new Uint8Array(pad));
  }
  parts.push(new Uint8Array(1024));
  const tar = new Blob(parts);
  const gzip = tar.stream().pipeThrough(new CompressionStream('gzip'));
  return new Response(gzip).blob();
}

const encoder = new TextEncoder();

function header(path: string, size: number): Uint8Array<ArrayBuffer> {
  const block = new Uint8Array(512);
  const [prefix, name] = splitPath(path);
  write(block, 0, 100, name);
  write(block, 100, 8, '0000644\0');
  write(block, 108, 8, '0000000\0');
  write(block, 116, 8, '0000000\0');
  write(block, 124, 12, `${size.toString(8).padStart(11, '0')}\0`);
  const mtime = Math.floor(Date.now() / 1000);
  write(block, 136, 12, `${mtime.toString(8).padStart(11, '0')}\0`);
  write(block, 148, 8, '        ');
  block[156] = 0x30; // '0': a regular file
  write(block, 257, 6, 'ustar\0');
  write(block, 263, 2, '00');
  write(block, 345, 155, prefix);
  const sum = block.reduce((a, b) => a + b, 0);
  write(block, 148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return block;
}

function splitPath(path: string): [string, string] {
  const bytes = encoder.encode(path);
  if (bytes.length <= 100) return ['', path];
  for (let cut = path.lastIndexOf('/'); cut > 0; cut = path.lastIndexOf('/', cut - 1)) {
    const prefix = path.slice(0, cut);
    const name = path.slice(cut + 1);
    if (encoder.encode(prefix).length <= 155 && encoder.encode(name).length <= 100) {
      return [prefix, name];
    }
  }
  throw new Error(`path too long for a tar archive: ${path}`);
}

function write(block: Uint8Array, offset: number, length: number, text: string): void {
  block.set(encoder.encode(text).subarray(0, length), offset);
}
