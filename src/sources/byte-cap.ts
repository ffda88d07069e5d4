import { Transform, type TransformCallback } from 'node:stream';

/**
 * Passes bytes through and fails the stream with `tooLarge()` as soon as their total passes
 * `max`: what bounds every stream whose size the sender decides (uploads, unpacking, artifacts).
 */
export class ByteCap extends Transform {
  private seen = 0;

  constructor(
    private readonly max: number,
    private readonly tooLarge: () => Error,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.seen += chunk.length;
    if (this.seen > this.max) done(this.tooLarge());
    else done(null, chunk);
  }
}
