import type { SocketOwner } from './unix-listener.js';

/** The host uids sandboxes run as when the control plane is root: one per live sandbox. */
export interface UidRange {
  first: number;
  count: number;
}

/**
 * Hands each sandbox a host uid of its own from the range, so no two live sandboxes of this
 * instance share one (nor any with us: never 0). Instances start at different offsets (their id),
 * so parallel instances rarely meet. Without root there is nothing to switch to: every sandbox
 * keeps our own unprivileged uid.
 */
export class SandboxUsers {
  private readonly inUse = new Set<number>();
  private next: number;

  constructor(
    private readonly range: UidRange | undefined,
    offset: number,
  ) {
    this.next = range ? offset % range.count : 0;
  }

  /** What /readyz and the start log say about sandbox users. */
  get detail(): string {
    if (!this.range) {
      return `sandboxes run as the control plane's uid ${process.getuid?.() ?? '?'} (not root)`;
    }
    const last = this.range.first + this.range.count - 1;
    return `each sandbox runs as its own host uid from ${this.range.first}-${last} (${this.inUse.size} in use)`;
  }

  /** A free uid (gid alike), or undefined when we are not root. Throws when the range is spent. */
  acquire(): SocketOwner | undefined {
    if (!this.range) return undefined;
    for (let tries = 0; tries < this.range.count; tries += 1) {
      const uid = this.range.first + this.next;
      this.next = (this.next + 1) % this.range.count;
      if (!this.inUse.has(uid)) {
        this.inUse.add(uid);
        return { uid, gid: uid };
      }
    }
    throw new Error(`all ${this.range.count} sandbox uids are in use`);
  }

  /** The uid of a sandbox a previous control plane started, taken back with it. */
  take(owner: SocketOwner | undefined): SocketOwner | undefined {
    if (owner && this.range) this.inUse.add(owner.uid);
    return this.range ? owner : undefined;
  }

  release(owner: SocketOwner | undefined): void {
    if (owner) this.inUse.delete(owner.uid);
  }
}
