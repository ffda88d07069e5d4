/**
 * Readiness of the parts `/readyz` waits for (store, source store, runtime, HTTP server). Each part
 * registers a check; `/readyz` is 200 only when every check passes.
 */
export class Readiness {
  private readonly checks = new Map<string, () => ComponentStatus>();

  register(name: string, check: () => ComponentStatus): void {
    this.checks.set(name, check);
  }

  report(): { ready: boolean; components: Record<string, ComponentStatus> } {
    const components: Record<string, ComponentStatus> = {};
    let ready = this.checks.size > 0;
    for (const [name, check] of this.checks) {
      let status: ComponentStatus;
      try {
        status = check();
      } catch (err) {
        status = { ok: false, detail: (err as Error).message };
      }
      components[name] = status;
      if (!status.ok) ready = false;
    }
    return { ready, components };
  }
}

export interface ComponentStatus {
  ok: boolean;
  detail?: string;
  [extra: string]: unknown;
}
