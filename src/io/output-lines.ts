/** Longest line kept whole; a longer one is cut into pieces of this size. */
const MAX_LINE = 16_384;

/** Splits a byte stream into lines; a trailing partial line is held until `flush()`. */
export class LineSplitter {
  private partial = '';

  constructor(private readonly onLine: (line: string) => void) {}

  push(chunk: Buffer | string): void {
    const text = this.partial + chunk.toString();
    const parts = text.split('\n');
    this.partial = parts.pop() ?? '';
    for (const part of parts) this.onLine(part.endsWith('\r') ? part.slice(0, -1) : part);
    while (this.partial.length > MAX_LINE) {
      this.onLine(this.partial.slice(0, MAX_LINE));
      this.partial = this.partial.slice(MAX_LINE);
    }
  }

  flush(): void {
    if (this.partial !== '') this.onLine(this.partial);
    this.partial = '';
  }
}

/** The last `size` items. */
export class Recent<T> {
  private readonly items: T[] = [];

  constructor(private readonly size: number) {}

  push(item: T): void {
    this.items.push(item);
    if (this.items.length > this.size) this.items.shift();
  }

  list(): T[] {
    return [...this.items];
  }
}
