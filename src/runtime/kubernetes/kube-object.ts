/** A Kubernetes object as the runtime writes it: any body, with the metadata it reads back. */
export type Obj = Record<string, unknown> & {
  metadata: { name: string; resourceVersion?: string; labels?: Record<string, string> };
};
