import { authHeaders, errorOf } from './api';

export interface DeployAnswer {
  app_id: string;
  url?: string;
  status_url?: string;
}

/**
 * `POST /v1/deploy` with XMLHttpRequest, the one browser API that reports upload progress.
 * Resolves with the 200/202 body; any other answer rejects with the API's error.
 */
export function uploadDeploy(
  metadata: object,
  source: Blob,
  onProgress: (fraction: number) => void,
): Promise<DeployAnswer> {
  const form = new FormData();
  form.append('metadata', JSON.stringify(metadata));
  form.append('source', new File([source], 'source.tar.gz', { type: 'application/gzip' }));
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/v1/deploy');
    for (const [name, value] of Object.entries(authHeaders())) xhr.setRequestHeader(name, value);
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) onProgress(e.loaded / e.total);
    };
    xhr.onload = () => {
      let body: unknown;
      try {
        body = xhr.responseText ? JSON.parse(xhr.responseText) : undefined;
      } catch (err) {
        body = { code: 'bad_response', message: `not JSON: ${String(err)}` };
      }
      if (xhr.status === 200 || xhr.status === 202) resolve(body as DeployAnswer);
      else reject(errorOf(xhr.status, body));
    };
    xhr.onerror = () => reject(new Error('the upload failed: the server could not be reached'));
    xhr.send(form);
  });
}
